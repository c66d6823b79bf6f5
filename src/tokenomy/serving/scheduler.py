"""The serving engine as data (a profile) and what it implies: the KV capacity and the time of one scheduler step.

    EngineProfile   token budget (max_num_tokens), running-sequence cap, chunked prefill or not, KV block size, the
                    HBM share given to the cache (of the total, weights inside it: vLLM, SGLang; of the memory free
                    after weights: TensorRT-LLM), CUDA-graph sizes — catalog/engines/<name>.toml, built by answers
    kv_tokens       KV capacity per DP replica in tokens, the sum over its attention ranks and kv-batch shards:
                      total: (f·HBM − weights − activations) / KV bytes per token per chip
                      free:  f·(HBM − weights − activations) / KV bytes per token per chip
                    HBM = the usable HBM every door uses (Deployment.peaks: the driver-exposed Chip.exposed_hbm_bytes,
                    85.5e9 B on an "80 GB" H100), since the engines size the cache from cudaMemGetInfo
                    (activations: the engine's peak at a full token budget on every scheduler; KV per token from the
                    engine at ISL+OSL with every chip of the replica holding its share)
    kv_sequences    whole sequences that fit: dp · s · floor(tokens/(s·L)), s the replica's KV slots (attention ranks
                    x kv-batch shards: a sequence lives in one)
    step_time       one mixed step: n decodes at mean context c plus P prefill tokens at mean context c_p, timed by
                    the engine as Deployment.run times it; a fractional n (a steady-state mean) interpolates between
                    floor and ceil, and n = 0 (a prefill-only step) is timed as one one-token sequence beside the
                    chunk (the engine needs a batch >= 1). StepTimer: the same for many steps at one context,
                    lowered once (engine.lower) and batched per step (engine.batched)
    kv_sequence_bytes  KV one sequence caches at ``tokens`` (engine.cache_terms: KV + index keys + linear state)
    scheduler_ranks    the engine schedulers a layout runs: dp·ep under attention-DP (each attention rank batches
                    its own sequences, SGLang/TensorRT-LLM wide EP), else dp
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields, replace
from typing import NamedTuple

import numpy as np

from tokenomy.core import engine
from tokenomy.core.deployment import Deployment


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
    recv_interval: int = 1  # R: the scheduler receives new requests every R-th decode step ([scheduler])

    def on(self, eff):
        """The efficiency set as this engine runs it: the chip's terms with the engine's host and EP overlap and the
        eager launch time of its prompt passes."""
        return eff.with_(host_overlap=self.host_overlap, ep_overlap=self.ep_overlap, ep_sm_normal=self.ep_sm[0],
                         ep_sm_low_latency=self.ep_sm[1], eager_prefill_s_per_kernel=self.eager_prefill_s_per_kernel)

    def kv_dtype_for(self, weight_dtype: str) -> str:
        """The KV-cache dtype this engine picks by default for a checkpoint of ``weight_dtype``."""
        return dict(self.kv_dtype_by_weight).get(weight_dtype, self.kv_dtype_default)

    def label(self) -> str:
        return (f"{self.name} {self.version}: budget {self.max_num_tokens} tokens/step, max batch {self.max_batch}, "
                f"{'chunked' if self.chunked_prefill else 'whole-prompt'} prefill, KV blocks of {self.block_size}, "
                f"{self.hbm_fraction:g} of {'total' if self.fraction_of == 'total' else 'free'} HBM")


def profile_of(f, tp: int = 1, max_num_tokens: int | None = None, max_batch: int | None = None,
               version: str | None = None) -> EngineProfile:
    """The EngineProfile of a catalog engine file (catalog.schema.EngineFile), with the HBM share the engine
    sets for ``tp`` (kv_cache.by_tp: the largest TP key <= tp) and optional scheduler overrides; ``version``: the
    engine version run (the file's own by default), which decides whether its overlap scheduler is on."""
    kv, sch = f.kv_cache, f.scheduler
    frac = kv.hbm_fraction
    for k in sorted(kv.by_tp, key=int):
        if tp >= int(k):
            frac = kv.by_tp[k]
    return EngineProfile(f.name, f.version, sch.chunked_prefill, int(max_num_tokens or sch.max_num_tokens),
                         int(max_batch or sch.max_batch), kv.block_size, frac, kv.fraction_of,
                         tuple(f.cuda_graphs.batch_sizes), f.kv_dtype.default,
                         tuple(sorted(f.kv_dtype.by_weight.items())), _all_reduce(f.all_reduce),
                         *overlaps(f.host.overlap_since, version or f.version, f.overlap.two_batch_overlap),
                         (f.overlap.sm_share_normal, f.overlap.sm_share_low_latency), sch.reserve_output,
                         f.frontend.tokenize_s_per_token if f.frontend is not None else 0.0,
                         eager_prefill_s_per_kernel=0.0 if f.prefill_launch is None
                         else f.prefill_launch.eager_s_per_kernel, recv_interval=sch.recv_interval)


def _release(version: str) -> tuple[int, ...]:
    """'0.5.12' -> (0, 5, 12): a version's numeric release parts, for ordering."""
    return tuple(int(x) for x in re.findall(r"\d+", version)[:3])


def poll_steps(prof: EngineProfile):
    """(R − 1)/2: the decode steps a request that arrives while the engine decodes waits for the scheduler's next
    receive, R = ``recv_interval``. SGLang's SchedulerRecvSkipper (python/sglang/srt/managers/
    scheduler_recv_skipper.py, --scheduler-recv-interval R) counts 1 per decode step and polls the tokenizer's socket
    when the count reaches R, then restarts it; a prefill step weighs 1000 (a poll right after it). A request lands
    on a step boundary (a closed loop's client answers a finish; the engine's own phase is unrelated to it), so it
    waits 0, 1, ..., R − 1 steps with equal chance: (R − 1)/2 on average, 0 at R = 1 (every step polls). An idle
    engine spins through its loop and receives at once (serving.steady.solve charges the wait only where others
    decode): InferenceX's DeepSeek-R1 FP8 on 8 x B300 (SGLang 0.5.12, R = 10 below 16 clients, 30 from 16) measures
    TTFT 71 ms at 1 client, 117 ms at 2 (4.5 steps of ~7.6 ms), and 146 -> 312 ms from 8 to 16 clients (R 10 -> 30)."""
    return (float(prof.recv_interval) - 1.0) / 2.0


def overlaps(overlap_since: str | None, version: str, two_batch_overlap: bool) -> tuple[float, float]:
    """(h, ε) of an engine at ``version``: its scheduler's overlap (``overlaps_host``) and two-batch overlap, as the
    efficiency set takes them (EngineProfile.on; the calibrated set of answers/resolve.py)."""
    return float(overlaps_host(overlap_since, version)), float(two_batch_overlap)


def overlaps_host(overlap_since: str | None, version: str) -> bool:
    """Whether the engine at ``version`` overlaps its scheduler's CPU work with the GPU by default: from
    ``overlap_since`` on (catalog/engines [host]; None: never by default)."""
    if overlap_since is None:
        return False
    return _release(version) >= _release(overlap_since)


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


class KVCapacity(NamedTuple):
    """kv_tokens' answer, each field broadcast over the sequence lengths asked for."""

    tokens: object  # KV capacity per DP replica, tokens: free / bytes_per_token, summed over its slots
    bytes_per_token: object  # KV bytes per chip per token the replica caches, every chip holding its share
    free_bytes: object  # per chip, for the cache
    slots: object  # the replica's KV slots: attention ranks (attention-DP) x batch shards of each (kv-batch)


def kv_tokens(dep: Deployment, prof: EngineProfile, seq_tokens, isl=None) -> KVCapacity:
    """The KV capacity per DP replica (module docstring), from the engine's KV bytes per chip at two batches:
    one sequence per replica (the bytes a lone sequence puts on the chips that hold it) and one per chip of a stage
    in each micro-batch, B = dp·M·tp·ep (every attention rank and kv-batch shard holding its share). Their ratio is
    the replica's slots, s = ep under attention-DP, × a/K_split with kv-batch: DeepSeek-R1 at tp1 ep8 holds 8
    times the tokens one rank does. Broadcasts."""
    L_all = np.maximum(np.asarray(seq_tokens, float), 1.0)
    one_length = _uniform(L_all)
    if one_length is not None:  # one length (a scalar, or a sweep over the load alone): lowered as a number
        L, back = np.asarray(one_length), None
    else:  # a sweep repeats few sequence lengths: lower each once
        L, back = np.unique(L_all, return_inverse=True)
    lo = dep.lower(L)
    full = lo.dp * lo.microbatches * lo.group  # one sequence per chip of a stage, per micro-batch
    lone = np.asarray(engine.batched(lo, lo.dp).kv_bytes_per_chip, float)
    spread = np.asarray(engine.batched(lo, full).kv_bytes_per_chip, float) * lo.dp / full
    per_tok, slots = spread / L, np.round(lone / spread)
    w = np.asarray(lo.weight_bytes_per_chip, float)
    if back is None:
        per_tok, slots, w = (np.broadcast_to(x, L_all.shape) for x in (per_tok, slots, w))
    else:
        per_tok, slots, w = (np.reshape(np.broadcast_to(x, L.shape)[back], L_all.shape) for x in (per_tok, slots, w))
    # each scheduler's largest step, per point: the token budget, which an engine admitting whole prompts sizes to
    # hold one (step_budget; ``isl``: the prompts served, None: the budget as configured): its activations are
    # reserved before the cache is sized (vLLM profiles a forward pass at max_num_batched_tokens; TensorRT-LLM's
    # free_gpu_memory_fraction is of the memory left after weights and activations at max_num_tokens)
    step_tokens = step_budget(prof, isl) if isl is not None else float(prof.max_num_tokens)
    budget = np.asarray(step_tokens, float) * scheduler_ranks(dep.layout) * lo.microbatches
    act = np.asarray(engine.batched(dep.lower(1.0), lo.dp, prefill_tokens=budget).act_bytes_per_chip, float)
    hbm, f = float(dep.peaks.hbm_bytes), prof.hbm_fraction
    free = f * hbm - w - act if prof.fraction_of == "total" else f * (hbm - w - act)
    free = np.broadcast_to(free, L_all.shape)
    return KVCapacity(np.maximum(free, 0.0) / per_tok, per_tok, free, slots)


def sequences_held(dep: Deployment, prof: EngineProfile, isl, osl):
    """B_kv: sequences of ISL + OSL tokens (rounded up to KV blocks) whose cache fits, over all DP replicas."""
    return kv_capacity(dep, prof, isl, osl)[0]


def kv_capacity(dep: Deployment, prof: EngineProfile, isl, osl):
    """(B_kv = kv_sequences, the KV capacity per DP replica in tokens from kv_tokens) at L = ISL + OSL rounded up to
    KV blocks."""
    L = np.ceil((np.asarray(isl, float) + np.asarray(osl, float)) / prof.block_size) * prof.block_size
    kv = kv_tokens(dep, prof, L, isl)
    return kv_sequences(dep, kv, L), kv.tokens


def kv_sequences(dep: Deployment, kv: KVCapacity, seq_tokens):
    """Whole sequences of ``seq_tokens`` tokens a deployment's KV holds (kv from kv_tokens at that length): each of
    a replica's s slots holds floor(tokens/(s·L)), dp·s·floor(tokens/(s·L)) over the replicas."""
    return float(dep.layout.dp) * kv.slots * np.floor(kv.tokens / (kv.slots * np.asarray(seq_tokens, float)))


class StepTimer:
    """Scheduler steps at one mean decode context and prefill context (module docstring: step_time): the contexts
    lowered once (engine.lower) and batched per call, so the serving model's several steps per point — with and
    without prefill, floor and ceil of a fractional batch — share the attention and KV terms of the context.
    ``many`` is steady.solve's step function; ``shape`` (the points') the shape its answers broadcast to."""

    def __init__(self, dep: Deployment, context, prefill_context=1.0, chunk_tokens=None, shape=None):
        self.dep, self.context, self.prefill_context = dep, context, prefill_context
        self.chunk_tokens = chunk_tokens  # a prompt chunk's tokens (engine.batched prefill_chunk)
        self.shape = shape
        self._lowered: list[tuple] = []  # (where decodes run, the lowering), the most recent last

    def _lower(self, busy) -> engine.Lowered:
        """The lowering at the context where ``busy`` (some decodes), at 1 elsewhere; one of the last two again for
        the same mask (the floor and the ceil of a batch below 1 differ: 0 and 1 decodes)."""
        for mask, lo in self._lowered:
            if np.shape(mask) == np.shape(busy) and np.array_equal(mask, busy):
                return lo
        lo = _lower_where(self.dep, busy, self.context, self.prefill_context)
        self._lowered = [*self._lowered[-1:], (busy, lo)]
        return lo

    def _batched(self, k, prefill) -> engine.Work:
        """The pass at k decodes (k whole), for engine.times: fewer than the DP replicas times the pipeline's
        micro-batches run as one sequence per micro-batch of each replica (the busiest times it, the others idle: a
        pipeline of pp stages with fewer sequences than stages takes pp stage times a token, as it does with one
        sequence in each of its pp micro-batches); none as one 1-token sequence per replica (the engine needs
        B >= dp·M)."""
        lay = self.dep.layout
        one = float(lay.dp) * float(lay.pp if lay.microbatches is None else lay.microbatches)
        busy = k >= 1.0
        batch = k if np.all(k >= one) else np.where(busy, np.maximum(k, one), one)  # max(k, one) = k where k >= one
        return engine.batched(self._lower(busy), batch, prefill, self.chunk_tokens)

    def __call__(self, n_dec, prefill=0.0, *, terms: bool = False):
        """Seconds of one step of ``n_dec`` decodes beside ``prefill`` tokens: a fractional n interpolated between
        floor and ceil, t = t(⌊n⌋) + (n − ⌊n⌋)·(t(⌈n⌉) − t(⌊n⌋)); ``terms``: also the PassTerms at the floor."""
        n, d = np.maximum(np.asarray(n_dec, float), 0.0), self.dep
        f, c = np.floor(n), np.ceil(n)
        r_lo = engine.times(self._batched(f, prefill), d.topo, d.peaks, d.eff)
        t = np.asarray(r_lo.step_s)
        if np.any(c != f):
            t = _between(n, f, t, engine.times(self._batched(c, prefill), d.topo, d.peaks, d.eff))
        return (t, r_lo) if terms else t

    def many(self, n_dec, loads) -> list[tuple]:
        """[(seconds, bound, reason) of the step at P beside the same n_dec decodes for P in loads], each over
        ``shape``: steady.solve's step function. One engine call for all the loads (stacked on a leading axis), so
        what depends on the batch alone is formed once; the engine is called here, not through __call__, to keep
        the serving path short (elementwise: __call__'s numbers)."""
        P = np.stack(np.broadcast_arrays(*(np.asarray(x, float) for x in loads)))
        n, d = np.maximum(np.asarray(n_dec, float), 0.0), self.dep
        f, c = np.floor(n), np.ceil(n)
        r = engine.times(self._batched(f, P), d.topo, d.peaks, d.eff)
        t = np.asarray(r.step_s)
        if np.any(c != f):
            t = _between(n, f, t, engine.times(self._batched(c, P), d.topo, d.peaks, d.eff))
        shape = (len(loads), *self.shape) if self.shape is not None else \
            np.broadcast_shapes(np.shape(t), np.shape(r.bound), np.shape(r.reason))
        t, bound, reason = (np.broadcast_to(x, shape) for x in (t, r.bound, r.reason))
        return [(t[i], bound[i], reason[i]) for i in range(len(loads))]


def _between(n, f, t_lo, hi: engine.PassTerms):
    """A fractional batch n's step, linear between its floor f's (t_lo) and its ceiling's (``hi``)."""
    return t_lo + (n - f) * (np.asarray(hi.step_s) - t_lo)


def _uniform(x):
    """The one value every element of ``x`` holds, else None."""
    a = np.asarray(x, float)
    v = a.flat[0] if a.size else np.nan
    return float(v) if np.all(a == v) else None


def _lower_where(dep: Deployment, busy, context, prefill_context) -> engine.Lowered:
    """dep.lower at ``context`` where ``busy``, at 1 elsewhere. A sweep's points mostly share one context (its
    ISL and OSL): then the two contexts are lowered as numbers and only the fields that differ between them are
    selected over the grid (engine.lower is elementwise in the context: the same values as lowering the grid,
    without its attention terms formed per point; ~15% of a 100k-point steady state, benchmarks/serve.py)."""
    c, pc = _uniform(context), _uniform(prefill_context)
    if c is None or pc is None:
        return dep.lower(np.where(busy, context, 1.0), prefill_context=prefill_context)
    if np.all(busy):
        return dep.lower(c, prefill_context=pc)
    idle = dep.lower(1.0, prefill_context=pc)
    if not np.any(busy):
        return idle
    at = dep.lower(c, prefill_context=pc)
    return replace(at, **{f.name: np.where(busy, getattr(at, f.name), getattr(idle, f.name))
                          for f in fields(at) if _differs(getattr(at, f.name), getattr(idle, f.name))})


def _differs(a, b) -> bool:
    """Two numeric lowered fields of different values (the model, layout and precision are the deployment's in
    both lowerings)."""
    numeric = (np.ndarray, float, int, np.generic)
    return isinstance(a, numeric) and isinstance(b, numeric) and not np.array_equal(a, b)


def step_time(dep: Deployment, n_dec, context, prefill=0.0, prefill_context=1.0, *, terms: bool = False,
              chunk_tokens=None):
    """Seconds of one scheduler step (module docstring); ``terms``: also the PassTerms at the floor batch;
    ``chunk_tokens``: a prompt chunk's tokens (StepTimer)."""
    return StepTimer(dep, context, prefill_context, chunk_tokens)(n_dec, prefill, terms=terms)


def rank_chunk(dep: Deployment, prof: EngineProfile, prefill):
    """The tokens of one prompt chunk where the layout would otherwise spread it — over pipeline micro-batches
    (pp > 1) or attention ranks (attention-DP): engine.batched prefill_chunk — else None: min(I, the step budget)
    chunked, the whole prompt otherwise. (Llama-8B on 8 H100 at pp8 had put an 8,000-token prompt at 0.05 s, under
    the 0.13 s of one chip's FLOPs.)"""
    lay = dep.layout
    if not (np.all(scheduler_ranks(lay) > lay.dp) or np.all(np.asarray(lay.pp) > 1)):
        return None
    I = np.asarray(prefill, float)
    return np.minimum(I, float(prof.max_num_tokens)) if prof.chunked_prefill else I


def kv_sequence_bytes(dep: Deployment, tokens):
    """Bytes one sequence caches at ``tokens`` tokens, over the whole model (engine.cache_terms)."""
    t = np.asarray(tokens, float)
    return np.asarray(engine.cache_terms(dep.shape.coeffs, t, np.ones_like(t), dep.precision).cached_per_seq, float)


def scheduler_ranks(layout):
    """Schedulers that batch sequences independently: dp·ep under attention-DP (ep > 1; attn_dp None = on, as the
    layout reads it), else dp. An int for one layout, an array for a column of layouts (their degrees arrays)."""
    ep = np.asarray(layout.ep)
    attn = np.asarray(True if layout.attn_dp is None else layout.attn_dp)
    ranks = np.asarray(layout.dp) * np.where((ep > 1) & (attn != 0), ep, 1)
    return int(ranks) if ranks.ndim == 0 else ranks
