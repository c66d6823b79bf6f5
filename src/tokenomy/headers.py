"""People's column headers: one table from a result's field name to what a table shows above it (issue 30).

JSON and CSV keep the field names (``ttft_s``, ``usd_per_mtok_output``); a rich table on the CLI and a table or
card on a page show ``header(field)``. Where a cell carries its unit (``fmt_cell`` prints "23.1 ms", "412 tok/s",
"18.9 GB") the header does not repeat it; where the cell is a bare number (dollars per million tokens, joules,
occupancy shares) the header says the unit. A field not in the table is read from its name: the unit suffix
(``_s``, ``_bytes``) dropped, ``_usd`` as "($)", underscores as spaces.
"""

from __future__ import annotations

HEADERS: dict[str, str] = {
    # latency users see (serve, workload)
    "ttft_s": "TTFT", "tpot_s": "TPOT", "ttft_p99_s": "TTFT p99", "tpot_p99_s": "TPOT p99", "e2e_s": "end to end",
    "kv_transfer_s": "KV hand-off", "worst_case_latency_s": "worst-case latency", "tick_s": "tick",
    # a pass (decode, prefill) and its terms
    "step_s": "step", "roofline_step_s": "roofline step", "compute_s": "compute", "memory_s": "memory",
    "comms_s": "comms", "overhead_s": "overhead", "weights_s": "weights read", "kv_s": "KV read",
    "matmul_s": "matmuls", "comm_exposed_s": "comms exposed", "len_pass": "new tok/seq",
    # throughput and money
    "tokens_per_s_per_chip": "tok/s/chip", "tokens_per_s_per_user": "tok/s/user", "requests_per_s": "req/s",
    "goodput_requests_per_s": "goodput req/s", "goodput_requests_per_usd": "goodput req/$",
    "usd_per_mtok": "$/Mtok", "usd_per_mtok_input": "$/Mtok in", "usd_per_mtok_output": "$/Mtok out",
    "usd_per_mtok_input_miss": "$/Mtok in (miss)", "usd_per_mtok_input_hit": "$/Mtok in (hit)",
    "hit_rate": "hit rate", "hit_rate_for_10x": "hit rate for 10x", "dram_bytes": "DRAM/node",
    "tco_usd_per_mtok": "TCO $/Mtok", "tco_usd_per_mtok_output": "TCO $/Mtok out",
    "usd_per_chip_hour": "$/chip-h", "usd": "cost ($)", "chip_hours": "chip-hours",
    "predicted_chip_hours": "chip-hours (predicted)", "published_chip_hours": "chip-hours (published)",
    # energy
    "j_per_output_token": "J/out tok (all-in)", "j_per_token_all_in": "J/tok (all-in)",
    "tokens_per_s_per_mw": "tok/s per MW (all-in)",
    # memory and fit
    "memory_per_chip_bytes": "memory/chip", "weights_per_chip_bytes": "weights/chip", "kv_per_chip_bytes": "KV/chip",
    "activations_per_chip_bytes": "activations/chip", "weight_bytes": "weights", "hbm_bytes": "HBM",
    "kv_bytes_per_token": "KV/token", "kv_occupancy": "KV occupancy", "capacity_limited": "over capacity",
    "fits": "fits", "mfu": "MFU", "bound": "bound", "running_batch": "running batch",
    "prefill_utilisation": "prefill busy", "bubble_fraction": "pipeline bubble",
    # workload and layout
    "isl": "ISL", "osl": "OSL", "concurrency": "concurrency", "rate": "rate (req/s)", "plan": "layout",
    "prefill_chips": "prefill chips", "decode_chips": "decode chips", "num_chips": "chips", "kv_dtype": "KV dtype",
    "global_batch": "global batch", "use_case": "use case", "ttft_slo_s": "TTFT SLO", "tpot_slo_s": "TPOT SLO",
    "chips_to_fit": "chips to fit", "min_chips": "min chips", "balance_batch": "balance batch",
    # hardware and models
    "hbm_bytes_per_s": "HBM bandwidth", "bf16_flops_per_s": "BF16 peak", "scale_up_bytes_per_s": "scale-up bandwidth",
    "flops_per_hbm_byte": "FLOP/B (ridge)", "active_params": "active params", "total_params": "total params",
    "model_type": "type", "num_layers": "layers", "model_flops": "model FLOPs",
    "display_name": "full name", "scale_up_domain_size": "scale-up domain (chips)", "scale_out_bytes_per_s":
    "scale-out bandwidth", "scale_up_latency_s": "scale-up latency", "scale_out_latency_s": "scale-out latency",
    "tdp_w": "TDP", "peak_flops_per_s": "peak",
    # the lecture's batch summary (tokenomy batch)
    "lecture_ratio": "R, FLOP/B (lecture's)", "lecture_balance_batch": "B* = R x sparsity (lecture's)",
    "balance_batch": "balance batch B*", "balance_batch_with_kv": "B* with KV", "max_batch_fit": "max batch that fits",
    "operating_batch": "operating batch", "memory_binds": "memory binds", "cost_floor_usd_per_mtok":
    "cost floor ($/Mtok)", "cost_batch1_usd_per_mtok": "cost at batch 1 ($/Mtok)", "unbatched_penalty":
    "unbatched penalty (x)", "unbatched_penalty_no_kv": "unbatched penalty, KV ignored (x)",
    "lecture_unbatched_penalty": "unbatched penalty (lecture's, x)", "operating_step_s": "step at operating batch",
    "operating_tokens_per_s": "tok/s at operating batch", "usd_per_mtok_at_operating":
    "$/Mtok at operating batch",
    # validation
    "median_abs_error": "median |error|", "signed_bias": "bias", "roofline_median_abs_error": "roofline median |error|",
    "roofline_signed_bias": "roofline bias", "error_fraction": "error", "throughput_error_fraction": "throughput error",
    "within_20pct": "within 20%",
}
_SUFFIXES = (("_bytes", ""), ("_usd", " ($)"), ("_s", ""))


def header(field: str) -> str:
    """The header people read for ``field``: the table's, else the name without its unit suffix, in words."""
    if field in HEADERS:
        return HEADERS[field]
    for suffix, unit in _SUFFIXES:
        if field.endswith(suffix) and len(field) > len(suffix) and not field.endswith("_per_s"):
            field = field[: -len(suffix)] + unit
            break
    return field.replace("_", " ")
