"""Prefill vs decode: the price of an input token vs an output token (lecture §2.12).

    pass of len_pass tokens:  t_compute = B·len_pass·N_active/FLOPs,  t_mem = (N_total + B·len_ctx·bytes_tok)/mem_bw
    cost per token = max(t_compute, t_mem) / (B·len_pass)
Prefill (len_pass = prompt) is compute-bound, decode (len_pass = 1) memory-bound, so if prices track cost
    output/input = (decode cost per token)/(prefill cost per token) = MFU_prefill / MFU_decode
                 = (t_mem/t_compute of decode) when prefill runs at the roofline
(the MFU form holds when both spend the same FLOPs per token, i.e. attention FLOPs ignored as in the lecture;
the engine's ratio is the cost ratio itself).
Providers charge 3-5× ("What I've seen in the past is 3-5x"); 5× reads as decode MFU ≈ 1/5 of prefill's.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from tokenomy.econ.cost import Serving

PROVIDER_RATIO = (3.0, 5.0)  # lecture §2.12


def implied_decode_memory_over_compute(output_usd_per_mtok, input_usd_per_mtok, prefill_mfu=1.0):
    """t_mem/t_compute of decode implied by a price sheet, if prices track cost: ratio / MFU_prefill."""
    return np.asarray(output_usd_per_mtok, float) / np.asarray(input_usd_per_mtok, float) / \
        np.asarray(prefill_mfu, float)


def implied_decode_mfu(output_usd_per_mtok, input_usd_per_mtok, prefill_mfu=1.0):
    """Decode MFU implied by a price sheet: MFU_prefill / (output/input)."""
    return 1.0 / implied_decode_memory_over_compute(output_usd_per_mtok, input_usd_per_mtok, prefill_mfu)


@dataclass(frozen=True)
class PriceRatio:
    """Engine prediction of input and output token costs at one operating point."""

    model: str
    hardware: str
    chips: int
    decode_batch: int
    context: int  # decode context (prompt + generated so far)
    prefill_batch: int
    prompt_tokens: int
    usd_per_mtok_input: float | None
    usd_per_mtok_output: float | None
    output_over_input: float | None
    prefill_mfu: float | None
    decode_mfu: float | None
    decode_memory_over_compute: float
    decode_bound: str | None
    provider_ratio_lo: float = PROVIDER_RATIO[0]
    provider_ratio_hi: float = PROVIDER_RATIO[1]

    @property
    def within_provider_range(self) -> bool | None:
        r = self.output_over_input
        return None if r is None else bool(self.provider_ratio_lo <= r <= self.provider_ratio_hi)

    def as_dict(self) -> dict:
        return {**asdict(self), "within_provider_range": self.within_provider_range}


def price_ratio(sv: Serving, decode_batch, context, prompt_tokens, prefill_batch=1,
                prefill: Serving | None = None) -> PriceRatio:
    """Cost per input token (a fresh prefill of ``prompt_tokens``, on ``prefill``'s layout, default ``sv``'s) and per
    output token (decode at ``context`` on ``sv``)."""
    if prompt_tokens > context:
        raise ValueError(f"prompt_tokens: must be <= context ({context}), got {prompt_tokens}")
    pre = (prefill or sv).terms(float(prefill_batch), float(prompt_tokens), float(prompt_tokens))
    dec = sv.terms(float(decode_batch), float(context))
    f = lambda t, x: float(np.ravel(x)[0]) if bool(np.ravel(t.fits)[0]) else None  # noqa: E731
    cin, cout = f(pre, pre.usd_per_mtok), f(dec, dec.usd_per_mtok)
    return PriceRatio(
        model=sv.model.name, hardware=sv.hardware.name, chips=sv.chips, decode_batch=int(decode_batch),
        context=int(context), prefill_batch=int(prefill_batch), prompt_tokens=int(prompt_tokens),
        usd_per_mtok_input=cin, usd_per_mtok_output=cout,
        output_over_input=None if cin is None or cout is None else cout / cin,
        prefill_mfu=f(pre, pre.mfu), decode_mfu=f(dec, dec.mfu),
        decode_memory_over_compute=float(np.ravel(dec.memory_s / dec.compute_s)[0]),
        decode_bound=dec.bound_name(0) if bool(np.ravel(dec.fits)[0]) else None)


def price_sheet_rows(price_files) -> list[dict]:
    """Published output/input ratios (and the long-context steps) from ``catalog.schema.ApiPriceFile`` objects."""
    rows = []
    for p in price_files:
        step = p.long_context[0] if p.long_context else None
        rows.append({"price_sheet": p.name, "provider": p.provider, "input_usd_per_mtok": p.input_usd_per_mtok,
                     "output_usd_per_mtok": p.output_usd_per_mtok,
                     "output_over_input": p.output_usd_per_mtok / p.input_usd_per_mtok,
                     "implied_decode_mfu_fraction": float(implied_decode_mfu(p.output_usd_per_mtok,
                                                                             p.input_usd_per_mtok)),
                     "long_context_above_tokens": step.above_tokens if step else None,
                     "long_context_input_multiplier": step.input_usd_per_mtok / p.input_usd_per_mtok if step else None,
                     "long_context_output_multiplier": (step.output_usd_per_mtok / p.output_usd_per_mtok
                                                        if step else None),
                     "source": p.source})
    return rows
