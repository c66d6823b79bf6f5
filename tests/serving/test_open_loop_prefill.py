"""Open loop (Poisson arrivals) with long prompts: the analytic TTFT counts the rest of the step an arrival lands
in (size-biased), the prompts that land in the same step, spills past the budget's room and the queue behind
full-room chunks (serving/steady.py), and agrees with the iteration-level simulator; where prefill takes over
45% of the engine's time the answer says the analytic TTFT understates the queue."""

import numpy as np
import pytest

from tokenomy.answers import workloads
from tokenomy.serving.simulator import simulate
from tokenomy.serving.prefill_queue import spill_share
from tokenomy.serving.steady import steady
from tokenomy.serving.workload import Lengths, Workload

# (rate, ISL, OSL): prefill 16-37% of engine time; measured when written: -3.3% .. +8.8% (8192 = two chunks)
QUIET = [(1.0, 4096, 128), (2.0, 4096, 128), (0.5, 8192, 256), (1.0, 8192, 256), (1.0, 6000, 200),
         (4.0, 1024, 1024)]


@pytest.mark.parametrize("R,isl,osl", QUIET)
def test_open_loop_ttft_matches_the_simulator_below_busy_prefill(dep, prof, R, isl, osl):
    s = steady(dep, prof, isl=isl, osl=osl, rate=[R])
    assert float(s.prefill_share[0]) < workloads.BUSY_PREFILL
    sim = simulate(dep, prof, Workload(Lengths("fixed", isl), Lengths("fixed", osl), rate=R), 3000)
    got = sim.summary(dep.chips)
    assert got["ttft_s"] == pytest.approx(float(s.ttft_s[0]), rel=0.10)
    assert got["tpot_s"] == pytest.approx(float(s.tpot_s[0]), rel=0.05)


def test_spill_share_is_poisson_tail_arithmetic():
    # one prompt ahead (k* = 1) spills: P = Σ Pois(K; λ)·K/(K + 1)
    lam = 0.5
    K = np.arange(60)
    pois = np.exp(-lam) * lam ** K / np.cumprod(np.r_[1.0, K[1:]])
    want = float(np.sum(pois * K / (K + 1.0)))
    assert float(spill_share(lam, 4096.0, 4096.0, 8128.0)) == pytest.approx(want, rel=1e-9)
    assert float(spill_share(lam, 100.0, 100.0, 8128.0)) == 0.0  # 80 short prompts ahead: never
    assert float(spill_share(0.0, 4096.0, 4096.0, 8128.0)) == 0.0  # nobody else


def test_busy_prefill_is_named_in_the_answer():
    r = workloads.serve("llama-3.1-70b", "hgx-h100-8", tp=8, rate=[1.0, 3.0], isl=6000, osl=200)
    busy = [n for n in r.notes if "of its time on prefill" in n]
    assert len(busy) == 1 and busy[0].startswith("3 requests/s")


def test_full_room_chunks_beyond_their_capacity_are_capacity_limited(dep, prof):
    """16k-token prompts hold two full-room steps each; at 20 requests/s those steps alone outlast a second, so
    the queue behind them has no steady state: capacity-limited, never a finite TTFT."""
    s = steady(dep, prof, isl=16384, osl=64, rate=[20.0])
    assert bool(s.capacity_limited[0]) and not np.isfinite(float(s.ttft_s[0]))


def test_busy_prefill_is_named_in_a_closed_loop_too():
    # 4096/128 on 8 x H100: prefill is a small share at one user and most of the engine's time at 128
    r = workloads.serve("llama-3.1-70b", "hgx-h100-8", tp=8, concurrency=[1, 128], isl=4096, osl=128)
    busy = [n for n in r.notes if "of its time on prefill" in n]
    assert len(busy) == 1 and busy[0].startswith("128 users")


def test_no_busy_note_where_no_one_queues():
    # one user has nobody to queue behind; prompts that arrive together are queued step by step in the model
    alone = workloads.serve("llama-3.1-70b", "hgx-h100-8", tp=8, concurrency=[1], isl=8000, osl=2)
    together = workloads.serve("llama-3.1-70b", "hgx-h100-8", tp=8, concurrency=[8], isl=8000, osl=2,
                               arrivals="together")
    assert not [n for n in alone.notes + together.notes if "of its time on prefill" in n]
