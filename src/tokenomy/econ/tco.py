"""Total cost of ownership: what a chip-hour costs its owner, and per million tokens beside the rental price.

    capex/h   = capex per chip / (amortisation years · 8,760 h)
    hosting/h = hosting $/kW-month · 12 / 8,760 · provisioned IT kW,   provisioned = TDP + host + network (per chip)
    energy/h  = all-in W at the step's load / 1,000 · $/kWh           (econ/energy.py: PUE included)
    TCO $/chip-h = capex/h + hosting/h + energy/h ;   $/Mtok = n · TCO $/chip-h · step_s / 3,600 / tokens · 1e6
Capex, years and hosting are catalog/power's (each chip's file and facility.toml, estimates labelled there).
"""

from __future__ import annotations

import numpy as np

from tokenomy.specs import PowerSpec

HOURS_PER_YEAR = 8760.0


def capex_usd_per_hour(p: PowerSpec) -> float:
    return p.capex_usd_per_chip / (p.amortisation_years * HOURS_PER_YEAR)


def provisioned_kw(p: PowerSpec) -> float:
    """IT power a chip's share of its system is provisioned for: TDP + host + network, kW."""
    return (p.tdp_w + p.host_w + p.network_w) / 1e3


def hosting_usd_per_hour(p: PowerSpec) -> float:
    return p.hosting_usd_per_kw_month * 12.0 / HOURS_PER_YEAR * provisioned_kw(p)


def usd_per_chip_hour(p: PowerSpec, all_in_w):
    """TCO per chip-hour at a load drawing ``all_in_w`` per chip (the module docstring)."""
    return capex_usd_per_hour(p) + hosting_usd_per_hour(p) + np.asarray(all_in_w, float) / 1e3 * p.usd_per_kwh


def usd_per_mtok(p: PowerSpec, all_in_w, chips, step_s, tokens_per_step):
    """n · TCO $/chip-h · step_s / 3,600 / tokens · 1e6."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return (np.asarray(chips, float) * usd_per_chip_hour(p, all_in_w) * np.asarray(step_s, float) / 3600.0
                / np.asarray(tokens_per_step, float) * 1e6)
