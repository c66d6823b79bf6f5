"""The KV capacity of a deployment under an engine profile.

    kv_tokens       KV capacity per DP replica in tokens, the sum over its attention ranks and kv-batch shards:
                      total: (f·HBM − weights − activations) / KV bytes per token per chip
                      free:  f·(HBM − weights − activations) / KV bytes per token per chip
                    HBM = the usable HBM every door uses (Deployment.peaks: the driver-exposed Chip.exposed_hbm_bytes,
                    85.5e9 B on an "80 GB" H100), since the engines size the cache from cudaMemGetInfo
                    (activations: the engine's peak at a full token budget on every scheduler; KV per token from the
                    engine at ISL+OSL with every chip of the replica holding its share)
    kv_sequences    whole sequences that fit: dp · s · floor(tokens/(s·L)), s the replica's KV slots (attention ranks
                    x kv-batch shards: a sequence lives in one)
    kv_sequence_bytes  KV one sequence caches at ``tokens`` (engine.cache_terms: KV + index keys + linear state)
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from tokenomy.core import engine
from tokenomy.core.deployment import Deployment
from tokenomy.serving.engine_profile import EngineProfile, scheduler_ranks, step_budget


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
    one_length = uniform_value(L_all)
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
    budget = largest_step_tokens(dep, prof, isl, lo.microbatches)
    act = np.asarray(engine.batched(dep.lower(1.0), lo.dp, prefill_tokens=budget).act_bytes_per_chip, float)
    hbm, f = float(dep.peaks.hbm_bytes), prof.hbm_fraction
    free = f * hbm - w - act if prof.fraction_of == "total" else f * (hbm - w - act)
    free = np.broadcast_to(free, L_all.shape)
    return KVCapacity(np.maximum(free, 0.0) / per_tok, per_tok, free, slots)


def weights_leave_room(dep: Deployment, prof: EngineProfile) -> bool:
    """Whether the weights alone leave HBM for a cache under the engine's share: f·HBM − W > 0 (a share of the total)
    or HBM − W > 0 (of the free memory), W the weight bytes per chip (the same at every context). Where they do not,
    kv_tokens' free bytes are <= 0 whatever the activations (>= 0) and no sequence fits: a check that needs no
    activation pass and no KV batching."""
    w = np.asarray(dep.lower(1.0).weight_bytes_per_chip, float)
    hbm, f = float(dep.peaks.hbm_bytes), prof.hbm_fraction
    return bool(np.all((f * hbm if prof.fraction_of == "total" else hbm) - w > 0))


def largest_step_tokens(dep: Deployment, prof: EngineProfile, isl, microbatches):
    """The prefill tokens of every scheduler's largest step, over the deployment: its token budget, which an engine
    admitting whole prompts sizes to hold one (step_budget; ``isl``: the prompts served, None: the budget as
    configured), times the schedulers and the micro-batches. Its activations are reserved before the cache is sized
    (vLLM profiles a forward pass at max_num_batched_tokens; TensorRT-LLM's free_gpu_memory_fraction is of the memory
    left after weights and activations at max_num_tokens)."""
    step_tokens = step_budget(prof, isl) if isl is not None else float(prof.max_num_tokens)
    one_budget = uniform_value(step_tokens)  # mostly one budget for all the points: the engine's pass at a number
    step_tokens = step_tokens if one_budget is None else one_budget
    return np.asarray(step_tokens, float) * scheduler_ranks(dep.layout) * microbatches


def sequences_held(dep: Deployment, prof: EngineProfile, isl, osl):
    """B_kv: sequences of ISL + OSL tokens (rounded up to KV blocks) whose cache fits, over all DP replicas."""
    return kv_capacity(dep, prof, isl, osl)[0]


def shared_block_tokens(prof: EngineProfile, shared_tokens):
    """The shared prefix as the block pool holds it: whole KV blocks (a partly filled block is each sequence's own)."""
    return np.floor(np.asarray(shared_tokens, float) / prof.block_size) * prof.block_size


def kv_capacity(dep: Deployment, prof: EngineProfile, isl, osl, shared_tokens=0.0):
    """(B_kv = kv_sequences, the KV capacity per DP replica in tokens from kv_tokens) at L = ISL + OSL rounded up to
    KV blocks. ``shared_tokens``: the prompt prefix every running sequence shares (a session workload's system
    prompt and forks, turn_types.TurnTypes.shared_tokens); vLLM's block pool references a cached block instead of
    copying it (vllm/v1/core/block_pool.py), so it is held once per replica and each sequence's own blocks are
    L − shared: B_kv = kv_sequences(tokens − shared, L − shared), but no more than the pass engine times (it counts
    each sequence's KV in full at the step's mean context ISL + OSL/2 against its usable HBM: engine_sequences), nor
    fewer than without sharing."""
    L = np.ceil((np.asarray(isl, float) + np.asarray(osl, float)) / prof.block_size) * prof.block_size
    kv = kv_tokens(dep, prof, L, isl)
    full = kv_sequences(dep, kv, L)
    if np.all(np.asarray(shared_tokens) == 0):
        return full, kv.tokens
    shared = shared_block_tokens(prof, shared_tokens)
    own = kv_sequences(dep, kv._replace(tokens=np.maximum(kv.tokens - shared, 0.0)), np.maximum(L - shared, 1.0))
    ctx = np.asarray(isl, float) + np.asarray(osl, float) / 2.0
    timed = engine_sequences(dep, prof, np.broadcast_to(ctx, np.shape(own)), isl, most=own)
    return np.maximum(timed, full), kv.tokens


def engine_sequences(dep: Deployment, prof: EngineProfile, context, isl, most):
    """The most sequences at ``context``, up to ``most``, that the pass engine times on ``dep``, by its own fit
    (engine.hbm_left_bytes: the usable HBM less weights, KV and activations per chip, >= 0) on the step of B decodes
    beside the prefill that fills every scheduler's largest step (largest_step_tokens: the most a steady step
    carries, B_d + P <= N_tok). The KV per chip grows with B in whole sequences per replica, rank and shard: B is
    found over whole numbers in [0, most] where ``most`` does not fit, each step at the secant's zero of the headroom
    and the number after it (near linear in B: one step mostly), bisecting after three. Broadcasts over ``context``
    and ``most``. DeepSeek-V3 tp8 on a GB200 NVL72 replica (kv-batch, dp9), 62.7k-token contexts: 184."""
    ctx_all = np.asarray(context, float)
    one = uniform_value(ctx_all)
    lo = dep.lower(ctx_all if one is None else one)
    tokens = largest_step_tokens(dep, prof, isl, lo.microbatches)
    hbm = engine.usable_hbm_bytes(dep.peaks, dep.eff)

    def left(B):  # the engine's headroom per chip on the step of B decodes (B stacked on a first axis)
        return np.asarray(engine.hbm_left_bytes(engine.batched(lo, B, np.maximum(tokens - B, 0.0)), hbm), float)

    high = np.array(np.broadcast_to(np.floor(np.asarray(most, float)), ctx_all.shape))
    low = np.zeros_like(high)  # none timed, or the weights and activations alone fill the HBM: 0
    left_low, left_high = left(np.stack([low, high]))
    low = np.where(left_high >= 0, high, low)  # ``most`` fits: the engine times it all
    for step in range(64):
        if not np.any(high - low > 1.0):
            break
        secant = low + np.floor((high - low) * left_low / np.maximum(left_low - left_high, 1e-30))
        guess = secant if step < 3 else np.floor((low + high) / 2.0)
        mid = np.clip(guess, low + 1.0, np.maximum(high - 1.0, low + 1.0))
        for B, room in zip((mid, mid + 1.0), left(np.stack([mid, mid + 1.0]))):  # the guess and the number after
            inside = (B > low) & (B < high)
            ok, bad = inside & (room >= 0), inside & (room < 0)
            low, left_low = np.where(ok, B, low), np.where(ok, room, left_low)
            high, left_high = np.where(bad, B, high), np.where(bad, room, left_high)
    return low


def kv_sequences(dep: Deployment, kv: KVCapacity, seq_tokens):
    """Whole sequences of ``seq_tokens`` tokens a deployment's KV holds (kv from kv_tokens at that length): each of
    a replica's s slots holds floor(tokens/(s·L)), dp·s·floor(tokens/(s·L)) over the replicas."""
    return float(dep.layout.dp) * kv.slots * np.floor(kv.tokens / (kv.slots * np.asarray(seq_tokens, float)))


def kv_sequence_bytes(dep: Deployment, tokens):
    """Bytes one sequence caches at ``tokens`` tokens, over the whole model (engine.cache_terms)."""
    t = np.asarray(tokens, float)
    return np.asarray(engine.cache_terms(dep.shape.coeffs, t, np.ones_like(t), dep.precision).cached_per_seq, float)


def uniform_value(x):
    """The one value every element of ``x`` holds, else None."""
    a = np.asarray(x, float)
    v = a.flat[0] if a.size else np.nan
    return float(v) if np.all(a == v) else None
