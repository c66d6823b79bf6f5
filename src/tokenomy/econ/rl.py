"""An RL step: rollouts priced with the serving engine, then training on them.

Lecture §2.10 ([T][FC]):  C_RL = (2..6) · N_active · D_RL / efficiency
    2 = rollouts only scored (forward, e.g. log-probs for a reward or KL term), 6 = every rollout token trained
    (forward + backward); the efficiency (~30%) is separate: rollouts are decode, which runs far below peak.
Here the efficiency is not assumed but computed: rollout time comes from the pass engine (Deployment.run: one
prefill of the prompts, then output_len decode steps at the mean context prompt + output/2, the midpoint of a step
time that grows linearly with context) on the deployment given (default: the ideal even split over the chips at
roofline efficiency, the bound), and
    effective MFU = flops_factor · N_active · tokens / (chip-seconds · peak);  penalty = train_mfu / effective MFU.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenomy.arch.model import ModelArch
from tokenomy.core.deployment import Deployment
from tokenomy.core.layout import Layout
from tokenomy.specs import Hardware
from tokenomy.units import SECONDS_PER_HOUR


@dataclass(frozen=True)
class RlStep:
    """One RL step of ``rollouts`` sequences; times in s, money in USD. NaN where rollouts do not fit."""

    rollouts: object
    tokens_per_step: object  # prompt + output tokens of all rollouts
    generated_tokens: object
    rollout_s: object  # prefill + decode of all rollout batches on the serving chips
    rollout_tokens_per_s: object  # generated tokens per second
    rollout_usd: object
    train_flops: object  # flops_factor · N_active · tokens_per_step
    train_s: object
    train_usd: object
    usd: object
    usd_per_generated_mtok: object
    effective_mfu: object  # (rollout + training) useful FLOPs over chip-seconds at peak
    efficiency_penalty: object  # train_mfu / effective_mfu
    fits: object


def check_flops_factor(f) -> float:
    f = float(f)
    if not 2 <= f <= 6:
        raise ValueError(f"flops_factor: {f:g} is outside 2..6 (2 = forward only, 6 = forward + backward of all)")
    return f


def rollout_deployment(m: ModelArch, hw: Hardware, chips=None, weight_dtype=None, kv_dtype="bf16") -> Deployment:
    """The serving side of an RL step by default: every weight and KV byte evenly over the chips, roofline."""
    n = hw.num_chips if chips is None else int(chips)
    return Deployment(m, hw, Layout.even_split(n), weight_dtype, kv_dtype)


@dataclass(frozen=True)
class RlRequest:
    """What one RL step does: ``rollouts`` sequences of ``prompt_len`` + ``output_len`` tokens generated, then
    trained at ``flops_factor`` (2..6) x N_active FLOPs per token at ``train_mfu`` of the ``compute_dtype`` peak."""

    rollouts: object
    prompt_len: object
    output_len: object
    flops_factor: float = 6.0
    train_mfu: float = 0.4
    compute_dtype: str = "bf16"


def rl_step(dep: Deployment, q: RlRequest, batch) -> RlStep:
    """Rollouts in batches of ``batch`` on the serving deployment ``dep`` (``rollout_deployment``: the bound), then
    training on the same chips at ``q.train_mfu``."""
    f, hw, train_mfu = check_flops_factor(q.flops_factor), dep.hardware, q.train_mfu
    n = dep.chips
    R, P, O, B = (np.asarray(x, dtype=float) for x in (q.rollouts, q.prompt_len, q.output_len, batch))
    pre, dec = dep.run(B, P, P), dep.run(B, P + O / 2, 1)
    end = dep.run(B, P + O, 1)  # the batch must also fit at its longest context, P + O
    fits = pre.ok & dec.ok & end.ok
    rollout_s = np.ceil(R / B) * (pre.step_s + O * dec.step_s)
    usd_per_s = n * dep.price / SECONDS_PER_HOUR
    n_active = float(dep.shape.coeffs.matmul_flops_per_token) / 2
    tokens = R * (P + O)
    _, peak = hw.chip.flops_for(q.compute_dtype)
    train_flops = f * n_active * tokens
    train_s = train_flops / (n * peak * train_mfu)
    usd = (rollout_s + train_s) * usd_per_s
    # Useful work: the forward that generated the tokens (2N) is already inside the factor f's count.
    eff = train_flops / ((rollout_s + train_s) * n * peak)
    w = lambda x: np.where(fits, x, np.nan)  # noqa: E731
    return RlStep(R, tokens, R * O, w(rollout_s), w(R * O / rollout_s), w(rollout_s * usd_per_s), train_flops,
                  train_s, train_s * usd_per_s, w(usd), w(usd / (R * O) * 1e6), w(eff), w(train_mfu / eff), fits)
