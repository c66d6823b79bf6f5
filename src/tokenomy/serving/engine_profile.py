"""The serving engine as data (a profile) and the limits it sets on a scheduler step.

    EngineProfile   token budget (max_num_tokens), running-sequence cap, chunked prefill or not, KV block size, the
                    HBM share given to the cache (of the total, weights inside it: vLLM, SGLang; of the memory free
                    after weights: TensorRT-LLM), CUDA-graph sizes — catalog/engines/<name>.toml, built by answers
    step_budget     tokens one step carries: max_num_tokens, or a whole prompt beside the decodes where the engine
                    does not chunk prefill; pooled_limits over a layout's schedulers; budget_batch the running
                    sequences the budget sustains; prompt_slot the prefill tokens a step takes
    poll_steps      the decode steps a request waits for the scheduler's next receive; poll_wait_s those seconds
    (TensorRT-LLM's delayed batching, the steps it holds a prompt: batch_wait.py)
    scheduler_ranks the engine schedulers a layout runs: dp·ep under attention-DP (each attention rank batches
                    its own sequences, SGLang/TensorRT-LLM wide EP), else dp
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenomy.core.engine_terms import EngineTerms


@dataclass(frozen=True)
class EngineProfile:
    name: str
    version: str
    chunked_prefill: bool
    max_num_tokens: int
    max_batch: int
    block_size: int
    hbm_fraction: float
    fraction_of: str  # "total" | "free"
    cuda_graph_sizes: tuple[int, ...] = ()
    kv_dtype_default: str = "bf16"  # the cache dtype the engine picks ('auto') for weights not in kv_dtype_by_weight
    kv_dtype_by_weight: tuple[tuple[str, str], ...] = ()
    all_reduce: str = ""  # the engine's TP all-reduce, in words (catalog/engines [all_reduce])
    host_overlap: float = 0.0  # h: 1 where the scheduler's CPU work overlaps the GPU's step (core/efficiency.py)
    ep_overlap: float = 0.0  # ε: 1 under two-batch overlap of the MoE dispatch + combine
    ep_sm: tuple[float, float] = (0.0, 0.0)  # (s_n, s_ll): the SMs its dispatch/combine kernels hold (normal, low-latency)
    reserve_output: bool = False  # admission reserves the whole ISL + OSL of KV blocks (TensorRT-LLM GUARANTEED_NO_EVICT)
    tokenize_s_per_token: float = 0.0  # the API server's host seconds per prompt token (catalog/engines [frontend])
    eager_prefill_s_per_kernel: float = 0.0  # e: host s per kernel of a prompt pass run eagerly ([prefill_launch])
    recv_interval: int = 1  # r_recv: the scheduler receives new requests every r_recv-th decode step ([scheduler])
    mixed_prefill: bool = True  # prompt chunks ride in the decode step, else a pass of their own ([scheduler])
    batch_wait_iters: int = 0  # T: TensorRT-LLM holds new prompts up to T iterations while others decode ([scheduler])
    batch_wait_tokens_ratio: float = 0.0  # ρ_w: ... or until they fill ρ_w·max_num_tokens (batch_wait_steps)
    moe_kernel: str = ""  # the MoE grouped GEMM it runs by default ([moe_kernel] default)
    expert_tiles: tuple[tuple[str, float], ...] = ()  # B_M of each of its MoE kernels ([moe_kernel] kernels)
    sequence_s: float = 0.0  # o_seq: host s per running sequence per step of its runtime ([host] runtimes)

    def on(self, eff, moe_kernel: str | None = None):
        """The efficiency set as this engine runs it (core/engine_terms.EngineTerms.on): the chip's terms with the
        engine's host and EP overlap, the eager launch time of its prompt passes, whether its prompt chunks share
        the decode step, the tile its MoE grouped GEMM (``moe_kernel``, None: its default) pads each expert to, and
        its runtime's per-sequence host time."""
        return EngineTerms(self.host_overlap, self.ep_overlap, self.ep_sm, self.sequence_s,
                           self.eager_prefill_s_per_kernel, float(self.mixed_prefill),
                           self.expert_tile_rows(moe_kernel)).on(eff)

    def expert_tile_rows(self, moe_kernel: str | None = None) -> float:
        """B_M: the rows the engine's MoE grouped GEMM ``moe_kernel`` (None: its default) pads each routed expert's
        tokens to (catalog/engines [moe_kernel]; 0 where the profile states none). A ValueError names a kernel the
        engine does not have."""
        tiles = dict(self.expert_tiles)
        name = moe_kernel or self.moe_kernel
        if not name:
            return 0.0
        if name not in tiles:
            raise ValueError(f"moe_kernel: {name!r} is not a MoE kernel of {self.name}; allowed: {', '.join(tiles)}")
        return tiles[name]

    def kv_dtype_for(self, weight_dtype: str) -> str:
        """The KV-cache dtype this engine picks by default for a checkpoint of ``weight_dtype``."""
        return dict(self.kv_dtype_by_weight).get(weight_dtype, self.kv_dtype_default)

    def label(self) -> str:
        return (f"{self.name} {self.version}: budget {self.max_num_tokens} tokens/step, max batch {self.max_batch}, "
                f"{'chunked' if self.chunked_prefill else 'whole-prompt'} prefill, KV blocks of {self.block_size}, "
                f"{self.hbm_fraction:g} of {'total' if self.fraction_of == 'total' else 'free'} HBM"
                + (f", delayed batching {self.batch_wait_iters} iterations / {self.batch_wait_tokens_ratio:g} of the "
                   "budget" if self.batch_wait_iters > 0 and self.batch_wait_tokens_ratio > 0 else ""))


def profile_of(f, tp: int = 1, max_num_tokens: int | None = None, max_batch: int | None = None,
               version: str | None = None) -> EngineProfile:
    """The EngineProfile of a catalog engine file (catalog.schema.EngineFile), with the HBM share the engine
    sets for ``tp`` (kv_cache.by_tp: the largest TP key <= tp) and optional scheduler overrides; ``version``: the
    engine version run (the file's own by default), which decides whether its overlap scheduler is on."""
    kv, sch, t = f.kv_cache, f.scheduler, f.terms_at(version)
    frac = kv.hbm_fraction
    for k in sorted(kv.by_tp, key=int):
        if tp >= int(k):
            frac = kv.by_tp[k]
    return EngineProfile(f.name, f.version, sch.chunked_prefill, int(max_num_tokens or sch.max_num_tokens),
                         int(max_batch or sch.max_batch), kv.block_size, frac, kv.fraction_of,
                         tuple(f.cuda_graphs.batch_sizes), f.kv_dtype.default,
                         tuple(sorted(f.kv_dtype.by_weight.items())), _all_reduce(f.all_reduce),
                         t.host_overlap, t.ep_overlap, t.ep_sm, sch.reserve_output,
                         f.frontend.tokenize_s_per_token if f.frontend is not None else 0.0,
                         eager_prefill_s_per_kernel=t.eager_prefill_s_per_kernel,
                         recv_interval=sch.recv_interval,
                         mixed_prefill=sch.mixed_prefill, batch_wait_iters=sch.batch_wait_iters,
                         batch_wait_tokens_ratio=sch.batch_wait_tokens_ratio,
                         moe_kernel=f.moe_kernel.default if f.moe_kernel is not None else "",
                         expert_tiles=tuple(sorted(f.moe_kernel.kernels.items())) if f.moe_kernel is not None else (),
                         sequence_s=t.sequence_s)


def poll_steps(prof: EngineProfile):
    """(r_recv − 1)/2: the decode steps a request that arrives while the engine decodes waits for the scheduler's next
    receive, r_recv = ``recv_interval``. SGLang's SchedulerRecvSkipper (python/sglang/srt/managers/
    scheduler_recv_skipper.py, --scheduler-recv-interval r_recv) counts 1 per decode step and polls the tokenizer's
    socket when the count reaches r_recv, then restarts it; a prefill step weighs 1000 (a poll right after it). A
    request lands on a step boundary (a closed loop's client answers a finish; the engine's own phase is unrelated to
    it), so it waits 0, 1, ..., r_recv − 1 steps with equal chance: (r_recv − 1)/2 on average, 0 at r_recv = 1 (every
    step polls). An idle engine spins through its loop and receives at once (serving.steady.solve charges the wait
    only where others decode): InferenceX's DeepSeek-R1 FP8 on 8 x B300 (SGLang 0.5.12, r_recv = 10 below 16
    clients, 30 from 16) measures TTFT 71 ms at 1 client, 117 ms at 2 (4.5 steps of ~7.6 ms), and 146 -> 312 ms from
    8 to 16 clients (r_recv 10 -> 30)."""
    return (float(prof.recv_interval) - 1.0) / 2.0


def poll_wait_s(poll_steps, batch, step_s, closed: bool = True):
    """W = P·min(1, n)·t: the wait of a request for the scheduler's next receive, P = ``poll_steps`` ((r_recv − 1)/2
    decode steps, ``poll_steps`` above: SGLang's SchedulerRecvSkipper) of ``step_s`` each where others decode as it
    lands, n of them: the B − 1 other clients in a closed loop, all B running by PASTA in an open one (Poisson
    arrivals see the time average). An idle engine spins through its loop and receives at once (n = 0: no wait).
    Open loop: the scheduler receives at steps 0, r_recv, 2·r_recv, ...; a Poisson arrival lands at a random
    instant, r_recv·u steps before the next receive (u uniform on (0, 1]): r_recv/2 steps on average, of which 1/2
    — the rest of the step under way — an engine receiving every step (r_recv = 1) waits as well (charged where the
    model charges it: the aggregated open loop's residual E[T²]/(2·E[T]), steady_steps; disagg's KV joining at the
    next decode step); the interval adds r_recv/2 − 1/2 = P steps, as a closed loop's arrival at a step boundary
    waits, busy a share min(1, B) of the time (tests/serving/test_disagg.py samples the cycle)."""
    others = np.clip(np.asarray(batch, float) - (1.0 if closed else 0.0), 0.0, 1.0)
    return poll_steps * others * step_s


def _all_reduce(a) -> str:
    """The profile's all-reduce in one line: what runs, the largest message its custom kernels take, on which groups."""
    cap = f"; custom kernels up to {a.custom_max_bytes / 2**20:g} MiB" if a.custom_max_bytes else ""
    sizes = f", groups of {'/'.join(map(str, a.world_sizes))}" if a.world_sizes else ""
    return f"{a.implementation}{cap}{sizes}"


def step_budget(prof: EngineProfile, isl, running=0.0):
    """Tokens one step may carry: the profile's max_num_tokens, or — for an engine that does not chunk prefill
    (TensorRT-LLM's default) — at least a whole prompt beside the running decodes (the engine refuses a prompt
    longer than its budget, so a deployment serving ISL-token prompts is configured with budget >= ISL + B;
    trtllm-bench sizes max_num_tokens from the dataset the same way)."""
    base = float(prof.max_num_tokens)
    if prof.chunked_prefill:
        return np.full(np.shape(isl), base) if np.ndim(isl) else base
    return np.maximum(base, np.asarray(isl, float) + np.asarray(running, float))


def pooled_limits(prof: EngineProfile, layout, isl, running):
    """(running-sequence cap, tokens per step) of a deployment's schedulers pooled: each of the r = scheduler_ranks
    schedulers (the DP replicas; the attention ranks under attention-DP) batches up to max_batch sequences and
    carries its own step budget beside its share of the ``running`` decodes, so the pool holds r·max_batch and
    r·step_budget(isl, running/r) — as the disaggregated pools count them."""
    r = float(scheduler_ranks(layout))
    return r * float(prof.max_batch), r * step_budget(prof, isl, np.asarray(running, float) / r)


def prompt_slot(room, prefill, whole_prompts):
    """Prefill tokens a step can take: the room N − n the decodes leave, or — for an engine that schedules whole
    prompts (does not chunk) — floor(room/I) whole prompts of I tokens (at least one: its budget fits a prompt
    beside the decodes, step_budget). A 4096-token prompt under an 8192-token budget beside 127 decodes: 8,065
    tokens chunked, 4,096 whole."""
    room, I = np.asarray(room, float), np.maximum(np.asarray(prefill, float), 1.0)
    return np.where(whole_prompts, np.maximum(np.floor(room / I), 1.0) * I, room)


def budget_batch(cap, osl, prefill, budget, whole_prompts=False):
    """The most running sequences a token budget N sustains. Each request asks for I prefill and OSL − 1 decode
    tokens from steps that carry at most N, over the life = chunks + OSL − 1 steps it holds a slot, so
    B·(I + OSL − 1)/life <= N. Without the limit a prefill-heavy workload (2048 in / 128 out) would claim the
    KV cache's whole batch while each step prefilled only N − B tokens, and throughput would grow with TP past
    the compute bound. At the limit every step is full and the decodes hold n = N·(OSL − 1)/(I + OSL − 1) of it,
    so a prompt's chunks = ceil(I/(N − n)) = ceil((I + OSL − 1)/N) and
        B_N = N·(ceil((I + OSL − 1)/N) + OSL − 1)/(I + OSL − 1)
    (closed form: iterating B <- N·life(B)/(I + OSL − 1) from a cap >= N stalls at the false root B = N, where
    the room N − B vanishes). ``whole_prompts``: an engine that does not chunk starts at most k = prompt_slot/I
    prompts a step, one chunk each, so B/OSL <= k: B_W = k·OSL, k at the room the decodes leave at the batch the
    other caps allow, min(cap, B_N) (4096/128 under 8192 tokens: one prompt a step, B <= 128 however much KV is
    free; a smaller k than the fixed point's by at most one prompt where B_W itself is below that batch)."""
    I, osl, N = (np.asarray(x, float) for x in (prefill, osl, budget))
    per_request = np.maximum(I + osl - 1.0, 1.0)
    life = np.ceil(per_request / np.maximum(N, 1.0)) + osl - 1.0
    B = np.minimum(np.asarray(cap, float), np.maximum(N * life / per_request, 1.0))
    if not np.any(whole_prompts):
        return B
    decodes = B * (osl - 1.0) / np.maximum(osl, 1.0)
    k = prompt_slot(N - decodes, I, True) / np.maximum(I, 1.0)
    return np.where(whole_prompts, np.minimum(B, np.maximum(k * osl, 1.0)), B)


def scheduler_ranks(layout):
    """Schedulers that batch sequences independently: dp·ep under attention-DP (ep > 1; attn_dp None = on, as the
    layout reads it), else dp. An int for one layout, an array for a column of layouts (their degrees arrays)."""
    ep = np.asarray(layout.ep)
    attn = np.asarray(True if layout.attn_dp is None else layout.attn_dp)
    ranks = np.asarray(layout.dp) * np.where((ep > 1) & (attn != 0), ep, 1)
    return int(ranks) if ranks.ndim == 0 else ranks
