"""The energy and ownership columns every answer's rows carry, from the engine's terms (econ/energy.py, econ/tco.py).

One function per row kind, so decode/prefill, serve, plan, sweep and train name the same quantities the same way:

    board_w_per_chip, all_in_w_per_chip      power per chip over the step (all-in: PUE x (board + host + network))
    j_per_token_board, j_per_token_all_in    a pass's energy per token it produces (decode: output, prefill: input)
    j_per_output_token(_all_in), j_per_input_token(_all_in)   serving: decode steps per output token, prefill per input
    tokens_per_s_per_mw                      all-in (InferenceX's "tok/s per all-in MW")
    energy_usd_per_mtok, tco_usd_per_chip_hour, tco_usd_per_mtok   beside the rental usd_per_mtok
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from tokenomy.catalog import loader
from tokenomy.econ import energy as en
from tokenomy.econ import tco
from tokenomy.specs import Hardware, PowerSpec

ENERGY_KEYS = ("board_w_per_chip", "all_in_w_per_chip", "j_per_token_board", "j_per_token_all_in",
               "tokens_per_s_per_mw", "energy_usd_per_mtok", "tco_usd_per_chip_hour", "tco_usd_per_mtok")


def power_of(hardware: Hardware, usd_per_kwh=None, facility=None) -> PowerSpec:
    """The hardware's chip's power spec under a deployment class, at a given electricity price (None: defaults);
    its TDP and HBM bandwidth the Hardware's own (a what-if chip's set values, Hardware.with_)."""
    if facility is not None and facility not in loader.facility_classes():
        raise ValueError(f"facility: {facility!r}; allowed: {', '.join(loader.facility_classes())}")
    spec = replace(loader.power(hardware.chip.name, facility), tdp_w=hardware.chip.tdp_w,
                   hbm_bytes_per_s=hardware.chip.hbm_bytes_per_s)
    return en.with_price(spec, usd_per_kwh)


def pass_energy(p: PowerSpec, busy, step_s, chips, tokens_per_step) -> dict[str, np.ndarray]:
    """The ENERGY_KEYS of a pass or a serving state (arrays over its grid; econ/energy.energy's arguments)."""
    e = en.energy(p, busy, step_s, chips, tokens_per_step)
    return {"board_w_per_chip": e.board_w, "all_in_w_per_chip": e.all_in_w,
            "j_per_token_board": e.j_per_token_board, "j_per_token_all_in": e.j_per_token_all_in,
            "tokens_per_s_per_mw": e.tokens_per_s_per_mw, "energy_usd_per_mtok": e.energy_usd_per_mtok,
            "tco_usd_per_chip_hour": tco.usd_per_chip_hour(p, e.all_in_w),
            "tco_usd_per_mtok": tco.usd_per_mtok(p, e.all_in_w, chips, step_s, tokens_per_step)}


def clean(x) -> float | None:
    """A float for a row, None where NaN (a point with no time)."""
    v = float(x)
    return None if v != v else v


SERVE_ENERGY_KEYS = ("board_w_per_chip", "all_in_w_per_chip", "j_per_output_token", "j_per_output_token_board",
                     "j_per_input_token", "j_per_token", "tokens_per_s_per_mw", "output_tokens_per_s_per_mw",
                     "total_tokens_per_s_per_chip", "energy_usd_per_mtok_input", "energy_usd_per_mtok_output",
                     "tco_usd_per_chip_hour", "tco_usd_per_mtok_input", "tco_usd_per_mtok_output")
# a simulated row rescales these with its request rate (answers/workloads._with_sim): the power stays, the tokens move
SIM_SCALED = {"decode_j_per_output_token": -1, "prefill_j_per_input_token": -1, "j_per_output_token": -1, "j_per_output_token_board": -1, "j_per_input_token": -1, "j_per_token": -1,
              "tokens_per_s_per_mw": 1, "output_tokens_per_s_per_mw": 1, "total_tokens_per_s_per_chip": 1,
              "energy_usd_per_mtok_input": -1, "energy_usd_per_mtok_output": -1, "tco_usd_per_mtok_input": -1,
              "tco_usd_per_mtok_output": -1}


def serving_energy(p: PowerSpec, s, chips, isl) -> dict[str, np.ndarray]:
    """The SERVE_ENERGY_KEYS of a serving steady state ``s`` (serving.steady.Steady): power from its mean step's busy
    shares; InferenceX's per-token energies (all-in power / a throughput: output, input or total tokens; _board: the
    boards alone); $ per Mtok of energy and of ownership split between input and output by the prefill share of step
    time, as the rental $ are (serving/steady.py)."""
    board = en.board_w(p, s.busy_compute, s.busy_hbm, s.busy_link)
    allin = en.all_in_w(p, board)
    out_tps = np.asarray(s.output_tokens_per_s, float)
    in_tps = np.asarray(s.requests_per_s, float) * np.asarray(isl, float)
    n = float(chips)
    share = np.asarray(s.prefill_share, float)
    tco_h = tco.usd_per_chip_hour(p, allin)
    with np.errstate(divide="ignore", invalid="ignore"):
        watts = n * allin
        per_mtok = lambda usd_per_s, tps: usd_per_s / tps * 1e6  # noqa: E731
        energy_usd_per_s = watts / en.J_PER_KWH * p.usd_per_kwh
        return {"board_w_per_chip": board, "all_in_w_per_chip": allin,
                "j_per_output_token": watts / out_tps, "j_per_output_token_board": n * board / out_tps,
                "j_per_input_token": watts / in_tps, "j_per_token": watts / (in_tps + out_tps),
                "tokens_per_s_per_mw": (in_tps + out_tps) / watts * 1e6, "output_tokens_per_s_per_mw": out_tps / watts * 1e6,
                "total_tokens_per_s_per_chip": (in_tps + out_tps) / n,
                "energy_usd_per_mtok_input": per_mtok(share * energy_usd_per_s, in_tps),
                "energy_usd_per_mtok_output": per_mtok((1.0 - share) * energy_usd_per_s, out_tps),
                "tco_usd_per_chip_hour": tco_h,
                "tco_usd_per_mtok_input": per_mtok(share * n * tco_h / 3600.0, in_tps),
                "tco_usd_per_mtok_output": per_mtok((1.0 - share) * n * tco_h / 3600.0, out_tps)}


def disagg_energy(p: PowerSpec, s, pre_chips: int, dec_chips: int, isl, osl) -> dict[str, np.ndarray]:
    """The SERVE_ENERGY_KEYS of a disaggregated steady state ``s`` (serving.disagg.Disagg), each pool's power from its
    own busy shares (the prefill pool's passes times their duty, the decode pool's steps). The per-token energies are
    InferenceX's, as aggregated serving's: both pools' all-in watts over a throughput (output, input, total), so the
    two modes compare; each pool's own share beside them (decode_j_per_output_token, prefill_j_per_input_token), and
    the energy and ownership $ split by pool as the rental $ are (input tokens pay the prefill pool: serving/disagg.py);
    power per chip the pools' mean, each pool's beside it."""
    board_p, board_d = en.board_w(p, *s.prefill_busy), en.board_w(p, *s.decode_busy)
    allin_p, allin_d = en.all_in_w(p, board_p), en.all_in_w(p, board_d)
    n_p, n_d = float(pre_chips), float(dec_chips)
    X = np.asarray(s.requests_per_s, float)
    in_tps, out_tps = X * float(isl), X * float(osl)
    w_p, w_d = n_p * allin_p, n_d * allin_d
    tco_p, tco_d = tco.usd_per_chip_hour(p, allin_p), tco.usd_per_chip_hour(p, allin_d)
    usd_per_j = p.usd_per_kwh / en.J_PER_KWH
    with np.errstate(divide="ignore", invalid="ignore"):
        return {"board_w_per_chip": (n_p * board_p + n_d * board_d) / (n_p + n_d),
                "all_in_w_per_chip": (w_p + w_d) / (n_p + n_d),
                "prefill_all_in_w_per_chip": allin_p, "decode_all_in_w_per_chip": allin_d,
                "j_per_output_token": (w_p + w_d) / out_tps,
                "j_per_output_token_board": (n_p * board_p + n_d * board_d) / out_tps,
                "j_per_input_token": (w_p + w_d) / in_tps, "j_per_token": (w_p + w_d) / (in_tps + out_tps),
                "decode_j_per_output_token": w_d / out_tps, "prefill_j_per_input_token": w_p / in_tps,
                "tokens_per_s_per_mw": (in_tps + out_tps) / (w_p + w_d) * 1e6,
                "output_tokens_per_s_per_mw": out_tps / (w_p + w_d) * 1e6,
                "total_tokens_per_s_per_chip": (in_tps + out_tps) / (n_p + n_d),
                "energy_usd_per_mtok_input": w_p * usd_per_j / in_tps * 1e6,
                "energy_usd_per_mtok_output": w_d * usd_per_j / out_tps * 1e6,
                "tco_usd_per_chip_hour": (n_p * tco_p + n_d * tco_d) / (n_p + n_d),
                "tco_usd_per_mtok_input": n_p * tco_p / 3600.0 / in_tps * 1e6,
                "tco_usd_per_mtok_output": n_d * tco_d / 3600.0 / out_tps * 1e6}


def train_energy(p: PowerSpec, st, run=None) -> dict[str, np.ndarray]:
    """Per training step (core.training.TrainStep): board power from its busy shares — the step's GEMMs (compute_s;
    their HBM traffic is inside the compute term's efficiency) and its collectives (comm_s) over step_s — all-in
    power, J per training token, and with a run its all-in MWh and energy $."""
    step = np.asarray(st.step_s, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        u_c = np.clip(np.asarray(st.compute_s, float) / step, 0.0, 1.0)
        u_l = np.clip(np.asarray(st.comm_s, float) / step, 0.0, 1.0)
        e = en.energy(p, (u_c, 0.0 * u_c, u_l), step, st.chips, st.tokens_per_step)
        out = {"board_w_per_chip": e.board_w, "all_in_w_per_chip": e.all_in_w,
               "j_per_token_all_in": e.j_per_token_all_in}
        if run is not None:
            joules = np.asarray(run.time_s, float) * np.asarray(st.chips, float) * e.all_in_w
            out["mwh_all_in"] = joules / en.J_PER_KWH / 1e3
            out["energy_usd"] = joules / en.J_PER_KWH * p.usd_per_kwh
    return out


def lifecycle_mwh(p: PowerSpec, flops_by_stage: dict[str, float], peak_flops_per_s: float, mfu: float) -> dict:
    """The lifecycle's stages in MWh: chip-hours = C / (peak · MFU · 3600), the lecture's $ rule, times the all-in
    power of a chip at its board limit (training is compute-bound; inference at the same provisioned power: an upper
    bound, decode draws less, econ/energy.py)."""
    kw = float(en.all_in_w(p, p.tdp_w)) / 1e3
    out = {f"{stage}_mwh": c / (peak_flops_per_s * mfu) / 3600.0 * kw / 1e3 for stage, c in flops_by_stage.items()}
    out["total_mwh"] = sum(out.values())
    out["all_in_kw_per_chip"] = kw
    return out
