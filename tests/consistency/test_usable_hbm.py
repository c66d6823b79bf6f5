"""One usable-HBM figure per chip behind train, decode and serve (issue 25, item 10): the driver-exposed bytes
(specs.Chip.exposed_hbm_bytes, 85.52e9 B on an "80 GB" H100). train had used the datasheet's 80e9 B while decode and
serve used 85.52e9 B, so Meta's Llama 3.1 405B layout (TP8 PP16, seq 8192; Grattafiori et al. 2024 Table 4), which
needs 82.3 GB per chip, was refused by train alone. A configuration needing 80-85.5 GB per chip fits in all three."""

from dataclasses import replace

import pytest

import tokenomy as tk
from tokenomy.answers.resolve import deployment, layout_of
from tokenomy.answers.workloads import engine_profile
from tokenomy.catalog import loader
from tokenomy.serving.scheduler import sequences_held, kv_tokens

H100 = loader.hardware("h100-sxm").chip


@pytest.fixture(scope="module")
def trained():
    return tk.train(model="llama-3.1-405b", hardware="h100-sxm", chips=16384, tp=8, pp=16, seq_len=8192,
                    global_batch=2048).rows()[0]


@pytest.fixture(scope="module")
def decoded():
    """Llama-3.1-70B at tp2 on 2 H100, 8 sequences of 8192 tokens: 81.3 GB per chip."""
    return tk.decode("llama-3.1-70b", "h100-sxm", chips=2, tp=2, batch=8, context=8192, kv_dtype="bf16").rows()[0]


def test_the_figure_is_the_exposed_bytes():
    assert H100.exposed_hbm_bytes == pytest.approx(85.52e9) and H100.hbm_bytes == 80e9


def test_train_fits_meta_405b_layout(trained):
    assert 80e9 < trained["memory_per_chip_bytes"] < H100.exposed_hbm_bytes
    assert trained["fits"], trained["why"]


def test_decode_fits_the_same_band(decoded):
    assert 80e9 < decoded["memory_per_chip_bytes"] < H100.exposed_hbm_bytes
    assert decoded["fits"]


def test_serve_holds_the_decoded_batch():
    """serve's KV at the whole exposed HBM (a share of 1.0 of the total) holds decode's 8 x 8192 tokens."""
    dep = deployment("llama-3.1-70b", "h100-sxm", layout=layout_of(tp=2), kv_dtype="bf16")
    prof = replace(engine_profile("vllm", 2, max_num_tokens=2048), hbm_fraction=1.0, fraction_of="total")
    assert float(sequences_held(dep, prof, 4096, 4096)) >= 8


def test_three_doors_one_figure(trained, decoded):
    dep = deployment("llama-3.1-70b", "h100-sxm", layout=layout_of(tp=2), kv_dtype="bf16")
    prof = replace(engine_profile("vllm", 2, max_num_tokens=256), hbm_fraction=1.0, fraction_of="total")
    free = float(kv_tokens(dep, prof, 8192.0).free_bytes)
    served = free + decoded["weights_per_chip_bytes"]  # + the activation reserve of 256 tokens, ~35 MB
    assert trained["hbm_bytes"] == decoded["hbm_bytes"] == float(dep.peaks.hbm_bytes) == H100.exposed_hbm_bytes
    assert H100.exposed_hbm_bytes - 0.1e9 < served <= H100.exposed_hbm_bytes
