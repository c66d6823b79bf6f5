"""One request end to end, prefill + decode (issue 30: "a 2k-in / 500-out chat: TTFT x ms + 499 x TPOT = y s, $z"):
the time and the price of one request of a ``serve`` answer's row.

    total_s = TTFT + (OSL − 1)·TPOT        the first token at TTFT, each later one a TPOT after the last (the cycle
                                           of serving/disagg.py and serving/steady.py: e2e without a client's wait)
    usd     = ISL·$in/1e6 + OSL·$out/1e6   serve's prices split a request's chip-seconds between its input and
                                           output tokens (their sum is chips·$/chip-hour / 3600 / requests/s)
"""

from __future__ import annotations


def one_request(row: dict, isl: int, osl: int) -> dict:
    """A serve row's request (module docstring): its TTFT, TPOT, decode time, total and dollars."""
    ttft, tpot = row["ttft_s"], row["tpot_s"]
    decode_s = (osl - 1) * tpot
    usd_in, usd_out = row.get("usd_per_mtok_input"), row.get("usd_per_mtok_output")
    usd = None if usd_in is None or usd_out is None else (isl * usd_in + osl * usd_out) / 1e6
    return {"isl": isl, "osl": osl, "ttft_s": ttft, "tpot_s": tpot, "decode_s": decode_s, "total_s": ttft + decode_s,
            "usd": usd, "usd_per_mtok_input": usd_in, "usd_per_mtok_output": usd_out,
            "kv_transfer_s": row.get("kv_transfer_s"), "plan": row.get("plan"),
            "capacity_limited": row.get("capacity_limited")}
