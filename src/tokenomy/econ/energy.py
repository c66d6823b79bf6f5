"""Power and energy of a pass from the engine's own terms: board and all-in watts, J per token, tokens/s per MW.

A chip draws its idle power whenever it is on, and on top of it a dynamic power set by how busy each of its units
is over the step. The engine already says how long each unit is busy (core/engine.py): the kernels' compute time,
the HBM time, the TP/EP communication time, per stage and micro-batch; a chip runs M micro-batches per period.

    u_c, u_m, u_l = min(1, M·compute_s / step_s), min(1, M·(memory_s + floor_s) / step_s), min(1, M·comms_s / step_s)
                    (engine.PassTerms.busy_shares)
    P_board  = P_idle + min(ΔP, a·ΔP·u_c + e·BW·u_m + c·ΔP·u_l),   ΔP = P_tdp − P_idle             W per chip
    P_all-in = PUE · (P_board + P_host + P_network)                                              W per chip
    J/token  = n · P · step_s / tokens_per_step          (board or all-in; n chips)
    tokens/s per MW = 1e6 / (J/token all-in)             $/Mtok (energy) = J/token all-in · 1e6 / 3.6e6 · $/kWh

Prefill and decode each get their own power from their own terms: a prefill pass is compute-bound (u_c near 1:
the board at its limit), a decode step memory-bound (u_m near 1, u_c small: below the limit), and a step held up by
the host leaves every unit idle for that share of the step (the static power a slow scheduler wastes; ML.ENERGY's
"static power wastage"). The kernels' launch floors (floor_s = f·K·κ·(1 + ε), in the engine's overhead term) are
GPU time, small kernels at full clocks, counted with the HBM's busy share.
The split is catalog/power/facility.toml's [split]: a = 1 (a step busy in its GEMMs runs at the board's power cap);
the HBM path as energy per byte e at the chip's bandwidth BW (so a chip streaming 8 TB/s spends 2.4x the watts of
one streaming 3.35 TB/s: the DRAM, PHY and on-chip path cost per bit, not per share of TDP), e fitted on published
GPU power under known load (validation/energy_cases.py: ML.ENERGY's measured power of Llama 3.1 8B/70B/405B on
1/4/8 H100 against batch, 513 W at batch 16 to 690 W at 256 for the 8B) inside the range HBM3's ~4 pJ/bit and the
on-chip path allow; c an estimate (collectives in decode are latency-bound: the SMs mostly wait). P_host and
P_network are per-chip shares of the reference system as provisioned (catalog/power/<chip>.toml), constant in the
load; PUE is the deployment class's. Wrong outside: power-capped or clock-locked boards, a board's idle power
rising with temperature (not modelled), and chips whose HBM path costs another energy per byte than Hopper's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from tokenomy.specs import PowerSpec

J_PER_KWH = 3.6e6


@dataclass(frozen=True)
class Energy:
    """Arrays over the grid (NaN where the pass has no time): power per chip and energy per token of a pass."""

    board_w: object  # per chip, averaged over the step
    all_in_w: object  # per chip: PUE x (board + host + network)
    j_per_token_board: object  # all chips' board energy per token of the pass
    j_per_token_all_in: object
    tokens_per_s_per_mw: object  # all-in
    energy_usd_per_mtok: object  # all-in energy at the electricity price


def board_w(p: PowerSpec, u_compute, u_hbm, u_link):
    """P_idle + min(ΔP, a·ΔP·u_c + e·BW·u_m + c·ΔP·u_l), ΔP = P_tdp − P_idle: a chip's board power at those busy
    shares."""
    span = p.tdp_w - p.idle_w
    dynamic = (p.compute_share * span * np.asarray(u_compute) + p.hbm_j_per_byte * p.hbm_bytes_per_s * np.asarray(u_hbm)
               + p.link_share * span * np.asarray(u_link))
    return p.idle_w + np.minimum(span, dynamic)


def all_in_w(p: PowerSpec, board):
    """PUE·(board + host + network) per chip: the power at the meter a chip's share of the site draws."""
    return p.pue * (np.asarray(board) + p.host_w + p.network_w)


def energy(p: PowerSpec, busy, step_s, chips, tokens_per_step) -> Energy:
    """The module docstring's chain for a pass or a mean serving step: ``busy`` = (u_c, u_m, u_l)
    (engine.PassTerms.busy_shares); ``tokens_per_step`` the tokens the energy is charged to per step_s (output
    tokens of a decode step, input tokens of a prefill pass; a serving state passes its tokens/s and 1 s)."""
    board = board_w(p, *busy)
    allin = all_in_w(p, board)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_token = np.asarray(chips, float) * np.asarray(step_s, float) / np.asarray(tokens_per_step, float)
        j_board, j_all = board * per_token, allin * per_token
        return Energy(board_w=board, all_in_w=allin, j_per_token_board=j_board, j_per_token_all_in=j_all,
                      tokens_per_s_per_mw=1e6 / j_all, energy_usd_per_mtok=j_all * 1e6 / J_PER_KWH * p.usd_per_kwh)


def with_price(p: PowerSpec, usd_per_kwh=None, pue=None) -> PowerSpec:
    """The spec at another electricity price or PUE (a user's --usd-per-kwh), each checked positive."""
    if usd_per_kwh is not None:
        x = float(usd_per_kwh)
        if not np.isfinite(x) or x < 0:
            raise ValueError(f"usd_per_kwh: must be a number >= 0, got {usd_per_kwh!r}")
        p = replace(p, usd_per_kwh=x)
    if pue is not None:
        x = float(pue)
        if not np.isfinite(x) or not 1.0 <= x <= 3.0:
            raise ValueError(f"pue: must be between 1 and 3, got {pue!r}")
        p = replace(p, pue=x)
    return p
