"""A validation case as the tool it names ran it: its Deployment (model, hardware, weight and KV dtypes,
Layout(tp, ep, dp = chips/(tp·ep))), its serving engine's profile at the case's version and settings, its benchmark
protocol's run (catalog/protocols: ``case_protocol``) and B_kv, the sequences of ISL + OSL tokens its engine's cache
holds (serving.scheduler.sequences_held, as `tokenomy serve`). prepare.py lowers the case on these; the disaggregated
cases (disagg_cases.py) and the checks through `serve` (tests/validation) build the same."""

from __future__ import annotations

import dataclasses
import math
from functools import lru_cache

from tokenomy.catalog import loader
from tokenomy.core.deployment import Deployment
from tokenomy.core.layout import Layout
from tokenomy.serving.protocol import Protocol, protocol_of
from tokenomy.serving.scheduler import EngineProfile, profile_of, sequences_held
from tokenomy.units import CHECKPOINT
from tokenomy.validation.schema import ServingCase

DEFAULT_MAX_BATCH = 4096  # scheduler cap when a source does not publish one (TensorRT-LLM's example log shows 4096)


@lru_cache(maxsize=None)
def deployment(model: str, hardware: str, layout: Layout, weight_dtype: str | None,
               kv_dtype: str = "bf16") -> Deployment:
    return Deployment(loader.model(model), loader.hardware(hardware), layout, weight_dtype, kv_dtype)


def case_layout(c: ServingCase) -> Layout:
    """Layout(tp, ep, dp = chips/(tp·ep)): each of dp replicas splits the model over tp·ep chips, the routed experts
    ep ways; attention data-parallel over the ep ranks where the case says so (else over all of them)."""
    return Layout(tp=c.tp, ep=c.ep, dp=c.chips // (c.tp * c.ep), kv_batch=c.kv_batch,
                  attn_dp=c.attn_dp if c.ep > 1 else None)


def case_deployment(c: ServingCase) -> Deployment:
    weights = None if c.weight_dtype == CHECKPOINT else c.weight_dtype
    return deployment(c.model, c.hardware, case_layout(c), weights, c.kv_dtype)



def case_profile(c: ServingCase) -> EngineProfile:
    """The case's serving-engine profile (catalog/engines) at the case's engine version (its overlap scheduler) and
    settings (token budget, two-batch overlap, the scheduler's receive interval, delayed batching, prompt passes
    launched eagerly or from piecewise CUDA graphs: ``prefill_cuda_graph``), its cache share
    the one the source states — kv_free_fraction of the memory free after weights and activations (TensorRT-LLM's
    rule) or gpu_memory_utilization of the total (vLLM's and SGLang's), else the engine's own rule and default — and
    its batch cap."""
    f = loader.engine_file(c.engine)
    prof = profile_of(f, c.tp, max_num_tokens=c.max_num_tokens,
                      max_batch=c.max_batch or DEFAULT_MAX_BATCH, version=c.engine_version)
    given = lambda x, default: default if x is None else x  # noqa: E731
    eager = {True: 0.0, False: f.eager_prefill_at(gated=False), None: prof.eager_prefill_s_per_kernel}
    memory = ({"hbm_fraction": c.gpu_memory_utilization, "fraction_of": "total"} if c.gpu_memory_utilization else
              {"hbm_fraction": c.kv_free_fraction, "fraction_of": "free"} if c.kv_free_fraction else {})
    return dataclasses.replace(prof, **memory,
                               ep_overlap=max(prof.ep_overlap, float(c.two_batch_overlap)),
                               recv_interval=c.scheduler_recv_interval or prof.recv_interval,
                               eager_prefill_s_per_kernel=eager[c.prefill_cuda_graph],
                               batch_wait_iters=given(c.batch_wait_timeout_iters, prof.batch_wait_iters),
                               batch_wait_tokens_ratio=given(c.batch_wait_max_tokens_ratio,
                                                             prof.batch_wait_tokens_ratio))


@lru_cache(maxsize=None)
def _protocol(name: str) -> Protocol:
    return protocol_of(loader.protocol_file(name))


def case_protocol(c: ServingCase) -> tuple[float, float, float, float]:
    """(burst, prompts, locked, median) of the case's protocol (module docstring): a closed-loop run only for the
    scenarios a serving engine runs as one (concurrency, max throughput); the tool's prompt count at the case's C;
    whether the tool reports the median TTFT. An open loop (request rate) gives its run's prompts (open_loop_prompts)
    and nothing else."""
    p = _protocol(c.protocol)
    if c.scenario == "request_rate":  # an open loop: its run's prompts, a finite run (serving.finite_run)
        return 0.0, float(open_loop_prompts(c)), 0.0, 0.0
    closed = p.arrivals in ("burst", "offline") and c.scenario in ("concurrency", "max_throughput")
    if not closed or (p.arrivals == "burst" and c.scenario == "max_throughput"):
        return 0.0, 0.0, 0.0, 0.0
    n = float(p.prompt_count(c.concurrency if c.scenario == "concurrency" else None, None, c.prompts))
    return 1.0, n, float(p.draw == "fixed"), float(p.ttft_statistic == "median")


def open_loop_prompts(c: ServingCase) -> float:
    """The prompts an open-loop case's run sends: the count its source states, else its tool's (a Poisson run of
    vllm bench serve sends --num-prompts), inf under the steady protocol with none stated (the steady state)."""
    if c.prompts:
        return float(c.prompts)
    p = _protocol(c.protocol)
    return math.inf if p.steady else float(p.prompt_count(None, c.request_rate))


def capacity_batch(d: Deployment, c: ServingCase) -> float:
    """B_kv: sequences of ISL + OSL tokens whose KV fits the case's engine cache (serving.scheduler.sequences_held, the
    rule ``tokenomy serve`` uses: device-exposed HBM, weights and activations at a full step budget)."""
    return float(sequences_held(d, case_profile(c), c.isl, c.osl))


