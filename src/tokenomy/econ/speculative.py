"""Speculative decoding, multi-token prediction and "fast mode" (lecture §2.14, which names but never analyses them).

A draft (a small model, or an MTP head) proposes k tokens; the target verifies them in one pass of k+1 tokens.
With an i.i.d. per-token acceptance rate α (Leviathan et al. 2023, arXiv 2211.17192, eq. 1):
    E[tokens per step] = (1 − α^(k+1)) / (1 − α)          (k+1 when α = 1)
Time per round = t_verify(k+1 tokens) + k·d·t_step(1), d = draft step / target step.
    memory-bound target: t_verify ≈ t_step  ⇒ speed-up ≈ E/(1 + k·d), cost per token × (1 + k·d)/E  (cheaper)
    compute-bound target: t_verify ≈ (k+1)·t_step ⇒ speed-up ≈ E/(k+1 + k·d) < 1: speculation wastes compute
The engine evaluates t_verify as a pass with len_pass = k+1 on the deployment's layout (attention and KV writes
included; MLA attention in the cheaper of its absorbed and plain forms, so k+1 tokens cost ~(k+1)x one token's
attention when attention binds).
Fast mode: a smaller batch (lower step time) plus speculation, priced against the normal operating point.

The model's own multi-token-prediction module as the draft (``draft="mtp"``; DeepSeek-V3 report, arXiv 2412.19437
§2.2): module j takes the previous depth's hidden state h and the embedding of the next token, RMSNorms both,
projects the concatenation [h; e] (2D) back to D with M_j (2D x D), runs ONE transformer block of the model's own
kind (attention + MoE/dense MLP) and the shared output head. Embedding and output head are shared with the main
model (resident once). Its cost is the same engine on a ModelArch holding just that block (``mtp_module``), on the
target's layout (one pipeline stage: the module sits after the last) under the same efficiency set. k draft tokens
= k sequential one-token MTP passes (module j for depth j, the last module reused past the model's count, as
vLLM's deepseek_mtp does for k > num_nextn_predict_layers); the min(k, modules) modules chained stay resident
beside the target, with their KV cache over the context, in the memory per chip.
The MTP round is one engine step: the draft passes run inside the verify step, so the host pays for the round once,
    round = t_verify(k+1 tokens; o_step + o_seq·b + K·κ) + k·t_draft(1 token; κ per MTP-block kernel)
t_draft being the module's kernels only (compute, memory, comms and the per-kernel floor κ), without the
per-step o_step and per-sequence o_seq (``mtp_draft``). TensorRT-LLM runs verification and drafting in one model
engine forward, "both the verification and draft stages can be captured in one graph" (tech blog 2, "DeepSeek R1 MTP
Implementation and Optimization"); vLLM's and SGLang's MTP proposers run in the same scheduler step, under CUDA
graphs. Charging o_step per draft had put DeepSeek-R1 on 8 x B200 at batch 1 at 1.35x (MTP1) and 1.25x (MTP3)
against the 1.78x and 2.28x TensorRT-LLM measured at those acceptance lengths (tech blog 1, "Pushing Latency
Boundaries: Optimizing DeepSeek-R1 Performance on NVIDIA B200 GPUs": mean accepted 1.92 and 2.82 tokens a step).
A draft model (``draft="model"``) stays priced at d x the plain step, its host time included in d.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from functools import cached_property

import numpy as np

from tokenomy.arch.model import ModelArch
from tokenomy.arch.params import count_params
from tokenomy.core.coeffs import coefficients, shape_of
from tokenomy.econ.cost import Serving, first_crossing

# Dwarkesh's motivating numbers for a provider's "fast mode" (lecture §2.14): 6× the price for 2.5× the speed.
FAST_MODE_PRICE, FAST_MODE_SPEED = 6.0, 2.5

# The acceptance of an MTP draft token. DeepSeek-V3 report (arXiv 2412.19437) §5.4.3: "the acceptance rate of the
# second token prediction ranges between 85% and 90%", 1.8x TPS with one MTP module. The low end, per drafted token,
# for every model and every depth (i.i.d., Leviathan et al. eq. 1). Later depths measure lower: vLLM PR #48892 (8
# chained MTP steps, gsm8k, temp 0) per-position acceptance 76/62/51/42/36/31/27/24% (each given the previous: ~0.8),
# vLLM PR #41044 (DeepSeek-V4, k = 2) 77% then 38%: for k > 1 pass a lower --acceptance.
MTP_ACCEPTANCE = 0.85
MTP_ACCEPTANCE_SOURCE = ("DeepSeek-V3 report, arXiv 2412.19437 §5.4.3: second-token acceptance 85-90% (1.8x TPS); "
                         "the low end, per drafted token; later depths measure lower (vLLM PR #48892: 76/62/51/42% "
                         "cumulative over positions 1-4; vLLM PR #41044, DeepSeek-V4 k=2: 77%, 38%)")
DRAFT_KINDS = ("model", "mtp")


def expected_tokens_per_step(alpha, k):
    """(1 − α^(k+1))/(1 − α): tokens emitted per verification step (accepted drafts + the bonus token)."""
    a, kk = np.asarray(alpha, float), np.asarray(k, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        e = (1.0 - a ** (kk + 1.0)) / (1.0 - a)
    return np.where(a >= 1.0, kk + 1.0, e)


def speedup_memory_bound(alpha, k, draft_cost=0.0):
    """E/(1 + k·d): the verify pass costs one ordinary step because weights and KV are read once."""
    return expected_tokens_per_step(alpha, k) / (1.0 + np.asarray(k, float) * np.asarray(draft_cost, float))


def speedup_compute_bound(alpha, k, draft_cost=0.0):
    """E/(k+1 + k·d): every verified position costs compute, accepted or not."""
    kk = np.asarray(k, float)
    return expected_tokens_per_step(alpha, k) / (kk + 1.0 + kk * np.asarray(draft_cost, float))


def check_speculation(k: int, alpha: float, draft_cost: float) -> None:
    if int(k) != k or k < 1:
        raise ValueError(f"draft_tokens: must be a positive integer, got {k}")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"acceptance: must be in [0, 1], got {alpha}")
    if not 0.0 <= draft_cost < 1.0:
        raise ValueError(f"draft_cost: must be in [0, 1) (draft step / target step), got {draft_cost}")


def mtp_module(m: ModelArch) -> ModelArch:
    """One MTP module of ``m`` as a model the engine runs: one decoder block of the model's own kind (its last
    KV-attention block: attention kind and MoE/dense MLP) with two more RMSNorms (on h and on the embedding), the
    2D x D projection (in ``extra_params``: the engine runs it as a dense matmul of 2·2D² FLOPs per token), its own
    final norm and the shared embedding and head (their capacity not counted again: ``MtpDraft``).
    DeepSeek-V3 (arXiv 2412.19437 §2.2): "a shared embedding layer Emb(·), a shared output head OutHead(·), a
    Transformer block TRM_k(·), and a projection matrix M_k ∈ R^{d×2d}"."""
    if not m.mtp_layers:
        raise ValueError(f"draft: model {m.name} has no multi-token-prediction module (mtp_layers = 0); "
                         "use draft='model' with a draft_cost")
    block = next((x for x in reversed(m.layers) if x.attention.kind != "linear"), m.layers[-1])
    D = m.hidden_size
    return replace(m, name=f"{m.name} MTP module", layers=(replace(block, norms=block.norms + 2),),
                   extra_params=2 * D * D, mtp_layers=0)


def mtp_params(m: ModelArch) -> int:
    """Weights of one MTP module beyond the shared embedding and head: block + 2 norms + projection + final norm."""
    p = count_params(mtp_module(m))
    return p.total - p.embed - p.head


@dataclass(frozen=True)
class MtpDraft(Serving):
    """An MTP module on the target's layout: its embedding and head are the target's (read each pass, resident once),
    so the resident embedding capacity is zero; every other coefficient is the module's own op list."""

    @cached_property
    def shape(self):
        c = coefficients(self.model)
        return shape_of(self.model, replace(c, capacity_embed_params=0.0))


def mtp_draft(sv: Serving) -> MtpDraft:
    """The target's MTP module on its layout (one stage: pp = 1, the same tp, ep, dp), dtypes and efficiency set less
    the host's per-step terms: a draft pass runs inside the verify step (module docstring), so o_step = o_seq = 0
    and only its kernels' floor κ remains."""
    lay = replace(sv.layout, pp=1, microbatches=None)
    base = {f.name: getattr(sv, f.name) for f in fields(Serving)}
    return MtpDraft(**base | {"model": mtp_module(sv.model), "layout": lay,
                              "eff": sv.eff.with_(overhead_s=0.0, sequence_overhead_s=0.0),
                              "layout_rule": f"the target's ({sv.layout_rule}), one stage"})


@dataclass(frozen=True)
class Speculation:
    """Per batch (arrays): the plain decode step, the speculative round, and their ratios."""

    batch: object
    base_step_s: object
    verify_step_s: object
    round_s: object  # verify + k draft steps
    tokens_per_step: float
    speedup: object  # tokens/s per user, speculative / plain
    cost_ratio: object  # $ per token, speculative / plain (same batch, same chips)
    base_usd_per_mtok: object
    usd_per_mtok: object
    base_bound: object
    fits: object
    draft_step_s: object = None  # one draft step
    draft_s: object = None  # the k draft steps of a round
    verify_bound: object = None
    draft_bound: object = None  # MTP: the draft pass's binding term (engine); None for a priced draft model
    memory_per_chip_bytes: object = None  # target + resident draft (MTP modules and their KV)
    draft_bytes_per_chip: object = None  # the resident MTP modules' weights + KV per chip
    hbm_bytes: object = None


def speculate(sv: Serving, batch, context, k: int, alpha: float, draft_cost: float = 0.0,
              draft: MtpDraft | None = None) -> Speculation:
    """Engine evaluation of speculative decoding at each batch: round = t_verify(k+1) + k·t_draft, the draft steps
    priced at d × the plain step, or, with ``draft`` (``mtp_draft(sv)``), each a one-token pass of the MTP module
    through the engine inside the verify step (its host overhead paid once, by t_verify: module docstring)."""
    check_speculation(k, alpha, 0.0 if draft is not None else draft_cost)
    B = np.asarray(batch, float)
    base = sv.terms(B, float(context))
    ver = sv.terms(B, float(context), float(k + 1), ep_low_latency=True)  # decode-shaped: the decode's EP kernels
    e = float(expected_tokens_per_step(alpha, k))
    mem = np.maximum(base.memory_per_chip_bytes, ver.memory_per_chip_bytes)
    fits = np.asarray(base.fits) & np.asarray(ver.fits)
    extra, d_bound = np.zeros_like(mem), None
    if draft is None:
        step = draft_cost * base.step_s
    else:
        dt = draft.terms(B, float(context))
        step, d_bound = dt.step_s, dt.bound
        resident = min(int(k), int(sv.model.mtp_layers))
        extra = resident * (np.asarray(dt.passes.weight_bytes_per_chip) + np.asarray(dt.passes.kv_bytes_per_chip))
        extra = np.broadcast_to(extra, np.shape(mem))
        mem = mem + extra
        fits = fits & (np.asarray(dt.reason) == 0) & (mem <= base.hbm_bytes)
    round_s = _round_s(ver.step_s, step, k)
    speed = e * base.step_s / round_s
    return Speculation(batch=B, base_step_s=base.step_s, verify_step_s=ver.step_s, round_s=round_s,
                       tokens_per_step=e, speedup=speed, cost_ratio=1.0 / speed,
                       base_usd_per_mtok=base.usd_per_mtok, usd_per_mtok=base.usd_per_mtok / speed,
                       base_bound=base.bound, fits=fits, draft_step_s=step, draft_s=k * step, verify_bound=ver.bound,
                       draft_bound=d_bound, memory_per_chip_bytes=mem, draft_bytes_per_chip=extra,
                       hbm_bytes=base.hbm_bytes)


def _round_s(verify_step_s, draft_step_s, k: int):
    """A speculation round: the verify pass of k+1 tokens, then k draft steps (module docstring)."""
    return verify_step_s + k * draft_step_s


def _latency_s(sv: Serving, batch, context, k: int, alpha: float, draft_cost: float, draft):
    """Seconds per token a user sees at each batch, from the engine's unmasked step times alone (Serving.unmasked):
    the plain step (k = 0), else speculate's round / E[tokens per step]; what fast_mode_point's search reads."""
    base = sv.unmasked(batch, float(context)).step_s
    if k == 0:
        return base
    ver = sv.unmasked(batch, float(context), float(k + 1), ep_low_latency=True).step_s
    step = draft_cost * base if draft is None else draft.unmasked(batch, float(context)).step_s
    return _round_s(ver, step, k) / float(expected_tokens_per_step(alpha, k))


def fast_mode_rows(sv: Serving, base_batch: float, batches, context, k: int, alpha: float,
                   draft_cost: float, draft: MtpDraft | None = None) -> list[dict]:
    """Speed and price multipliers of serving at a smaller batch, against plain decode at ``base_batch``:
    by batch alone, and with speculation. speed = tokens/s per user ratio; price = $ per token ratio."""
    ref = sv.terms(float(base_batch), float(context))
    sp = speculate(sv, batches, context, k, alpha, draft_cost, draft)
    ref_step, ref_cost = float(np.ravel(ref.step_s)[0]), float(np.ravel(ref.usd_per_mtok)[0])
    rows = []
    for i, b in enumerate(np.ravel(sp.batch)):
        ok = bool(np.ravel(sp.fits)[i])
        plain_speed = ref_step / float(np.ravel(sp.base_step_s)[i])
        v = (lambda x: x if ok else None)  # noqa: E731
        rows.append({"batch": int(b), "speed_multiplier_batch_only": v(plain_speed),
                     "price_multiplier_batch_only": v(float(np.ravel(sp.base_usd_per_mtok)[i]) / ref_cost),
                     "speed_multiplier": v(plain_speed * float(np.ravel(sp.speedup)[i])),
                     "price_multiplier": v(float(np.ravel(sp.usd_per_mtok)[i]) / ref_cost), "fits": ok})
    return rows


def fast_mode_point(sv: Serving, base_batch: float, context, target_speed: float = FAST_MODE_SPEED,
                    k: int = 0, alpha: float = 0.0, draft_cost: float = 0.0, speculative_base: bool = False,
                    draft: MtpDraft | None = None):
    """The largest batch (cheapest way) whose tokens/s per user is ``target_speed`` × that of ``base_batch``, and its
    price multiplier: (batch, price multiplier), or (None, None) when no batch is fast enough.
    k = 0: batch alone. speculative_base: the normal mode speculates too (same k, alpha, d)."""
    def per_token(b):
        if k == 0:
            t = sv.terms(b, float(context))
            return t.step_s, t.usd_per_mtok
        sp = speculate(sv, b, context, k, alpha, draft_cost, draft)
        return sp.round_s / sp.tokens_per_step, sp.usd_per_mtok
    if speculative_base and k:
        ref_lat, ref_cost = (float(np.ravel(x)[0]) for x in per_token(np.array([float(base_batch)])))
    else:
        t = sv.terms(float(base_batch), float(context))
        ref_lat, ref_cost = float(np.ravel(t.step_s)[0]), float(np.ravel(t.usd_per_mtok)[0])
    # speed(b) = ref_lat / latency(b) falls with b: find where it drops below the target.
    latency = lambda x: _latency_s(sv, x, context, k, alpha, draft_cost, draft)  # noqa: E731  per_token's [0]
    b = first_crossing(lambda x: target_speed - ref_lat / latency(x), 1.0, float(base_batch))
    if b is not None and b <= 1.0 and ref_lat / float(np.ravel(per_token(np.array([1.0]))[0])[0]) < target_speed:
        return None, None  # even one sequence per step is not fast enough
    b = float(base_batch) if b is None else b
    return b, float(np.ravel(per_token(np.array([b]))[1])[0]) / ref_cost
