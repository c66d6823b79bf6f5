"""A plan's settings as one engine's settings: the layout's degrees, dtypes, token budget, batch cap, KV share.

Each engine spells a layout its own way (the catalog's flag table, catalog/engines/flags/<engine>.toml, says where
each was read); a tokenomy layout is tp·ep·pp·dp chips, attention split tp ways in each of ep data-parallel ranks when
attn_dp (else tp·ep ways), each routed expert split tp ways over ep expert ranks (core/layout.py):
    vllm     EP puts whole experts on each rank, EP size = TP x DP (docs.vllm.ai v0.10.1 expert_parallel_deployment):
             ep > 1 runs only with tp 1: attn-dp -> --data-parallel-size ep, attn-tp -> --tensor-parallel-size ep,
             both with --enable-expert-parallel; a dense model's replicas -> --data-parallel-size dp
    sglang   --tp-size is every GPU of a stage (tp·ep), --ep-size ep (MoE TP = tp-size / ep), attn-dp ->
             --enable-dp-attention --dp-size ep (attention TP = tp-size / dp-size = tp); replicas -> --dp-size dp
             without attention-DP
    trtllm   --tp_size tp·ep, --ep_size ep (MoE TP = tp_size / ep_size); enable_attention_dp replicates attention on
             every rank (attention TP 1), so attn-dp runs only with tp 1; replicas are separate servers
A setting the engine lacks at its version raises ValueError("emit: ...") in one line: nothing half-written.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Settings:
    """One server's settings by tokenomy's setting names (the keys of the flag table) and its replica count."""

    values: dict
    replicas: int


def degrees(serving_engine: str, lay: dict) -> tuple[dict, int]:
    """(setting -> value for the layout, replicas: separate servers of that command) of a scalar layout dict
    (Layout.as_dict) on ``serving_engine`` (module docstring)."""
    t, e, p, d = int(lay["tp"]), int(lay["ep"]), int(lay["pp"]), int(lay["dp"])
    a, r = bool(lay.get("attn_dp")) and e > 1, int(lay.get("redundant_experts") or 0)
    if lay.get("kv_batch"):
        raise ValueError(f"emit: {serving_engine} has no KV batch-sharding inside the attention group (the plan's "
                         "kv-batch)")
    if lay.get("ideal"):
        raise ValueError("emit: the ideal even split is a bound, not a layout an engine runs")
    out: dict = {"pp": p} if p > 1 else {}
    if serving_engine == "vllm":
        if e > 1 and t > 1:
            raise ValueError(f"emit: vllm's expert parallelism keeps each expert whole on one GPU (EP size = TP x DP); "
                             f"the plan splits each expert {t} ways (tp{t} ep{e}): plan with --tp 1 or another engine")
        if e > 1:
            out.update({"dp": e} if a else {"tp": e}, ep=True)
            if r:
                out.update(eplb=True, redundant_experts=r)
            return out | ({"tp": 1} if a else {}), d
        return out | {"tp": t} | ({"dp": d} if d > 1 else {}), 1
    if serving_engine == "sglang":
        out["tp"] = t * e
        if e > 1:
            out["ep"] = e
            if r:
                out["redundant_experts"] = r
        if a:
            return out | {"attn_dp": True, "dp": e}, d
        return out | ({"dp": d} if d > 1 else {}), 1
    if serving_engine == "trtllm":
        if a and t > 1:
            raise ValueError(f"emit: trtllm's attention-DP runs attention unsplit on every rank (attention TP 1); the "
                             f"plan splits attention {t} ways in each of {e} DP ranks (tp{t} ep{e} attn-dp)")
        out["tp"] = t * e
        if e > 1:
            out["ep"] = e
            if r:
                out["redundant_experts"] = r  # slots over the routed experts: filled in by the caller
        if a:
            out["attn_dp"] = True
        return out, d
    raise ValueError(f"emit: {serving_engine!r}; allowed: vllm, sglang, trtllm")


def dtypes(serving_engine: str, table, weights_plan: str, weights_ckpt: str, kv: str, kv_auto: str) -> dict:
    """The dtype settings: activations bf16 (--dtype where the engine has it); weights quantized at load (vllm,
    sglang --quantization fp8) when the plan's weight dtype is FP8 and the checkpoint's is wider; the KV cache 'auto'
    where the engine's own choice (``kv_auto``) is the plan's, else the engine's spelling of it."""
    flags, out = table.flags, {}
    if "dtype" in flags:
        out["dtype"] = flags["dtype"].values["bf16"]
    if weights_plan != weights_ckpt:
        q = flags.get("quantization")
        if q is None or weights_plan not in q.values:
            online = f"; it quantizes online to {', '.join(q.values)} only" if q else ""
            raise ValueError(f"emit: the plan runs {weights_plan} weights from a {weights_ckpt} checkpoint; "
                             f"{serving_engine} {table.version} loads a pre-quantized {weights_plan} checkpoint for that{online}")
        out["quantization"] = q.values[weights_plan]
    k = flags["kv_dtype"]
    if kv == kv_auto:
        out["kv_dtype"] = "auto"
    elif kv in k.values:
        out["kv_dtype"] = k.values[kv]
    else:
        raise ValueError(f"emit: KV cache {kv}: {serving_engine} {table.version}'s {k.name or k.key} takes "
                         f"{', '.join(k.choices)} (auto = {kv_auto})")
    return out


def scheduler(serving_engine: str, prof) -> dict:
    """Token budget, batch cap, KV memory share and chunked prefill as the engine profile the plan ran under set
    them (catalog/engines/<engine>.toml; the KV share by TP where the engine sets it so)."""
    out = {"max_batch": int(prof.max_batch), "kv_share": round(float(prof.hbm_fraction), 4)}
    if serving_engine == "sglang":  # its chunk size is the budget; without chunking the prefill batch's token budget is
        return out | ({"max_num_tokens": int(prof.max_num_tokens)} if prof.chunked_prefill else
                      {"max_num_tokens": -1, "max_prefill_tokens": int(prof.max_num_tokens)})
    out["max_num_tokens"] = int(prof.max_num_tokens)
    if serving_engine == "trtllm":
        out["chunked_prefill"] = bool(prof.chunked_prefill)
    elif prof.chunked_prefill:
        out["chunked_prefill"] = True
    else:
        raise ValueError("emit: vllm's V1 engine always chunks prefill; this plan's profile does not")
    return out
