"""The catalog as answers: every model, one model, the hardware (all, or one chip/system in full).

    models()              one row per catalog model (what ``tokenomy models`` lists)
    model(name, kv_dtype) one model's parameters, KV bytes per token and layer kinds; payload() is the record
    hardware(name=None)   every chip and system, or one in full; payload() is the list, or the record
A model may be a catalog name, a config.json path, or a built ModelArch (the web's uploads).
"""

from __future__ import annotations

from tokenomy.answers.door import door
from tokenomy.answers.resolve import dtype_of, hardware_of, model_of
from tokenomy.answers.result import Result
from tokenomy.arch.model import ModelArch
from tokenomy.arch.params import count_params, kv_bytes_per_token, state_bytes_per_sequence, weight_bytes
from tokenomy.catalog import loader

MODEL_COLUMNS = ("name", "model_type", "num_layers", "total_params", "active_params", "attention",
                 "kv_bytes_per_token", "weight_bytes")
HARDWARE_COLUMNS = ("name", "num_chips", "bf16_flops_per_s", "hbm_bytes", "hbm_bytes_per_s", "scale_up_bytes_per_s",
                    "usd_per_chip_hour")


class Record(Result):
    """A Result of one row whose payload is that row itself (``tokenomy model NAME --json``)."""

    def payload(self):
        return self.rows()[0]


def model_summary(model: "str | ModelArch", kv_dtype: str = "bf16") -> dict:
    """Parameters (total, active), layer kinds, experts, KV bytes per token and weight bytes of one model."""
    m = model_of(model)
    p = count_params(m)
    layer_kinds: dict[str, int] = {}
    for layer in m.layers:
        d = layer.attention.describe()
        layer_kinds[d] = layer_kinds.get(d, 0) + 1
    windows = sorted({layer.attention.window for layer in m.layers if layer.attention.window})
    moe = [layer.mlp for layer in m.layers if layer.mlp.kind == "moe"]
    kv_dtype = dtype_of("kv_dtype", kv_dtype)
    return {
        "name": m.name, "model_type": m.model_type, "num_layers": m.num_layers, "hidden_size": m.hidden_size,
        "vocab_size": m.vocab_size, "total_params": p.total, "active_params": p.active,
        "active_params_excluding_embedding": p.active - (0 if m.tie_word_embeddings else p.embed),
        "attention": " + ".join(f"{n}x {k}" for k, n in layer_kinds.items()), "attention_kinds": layer_kinds, "sliding_windows": windows,
        "state_bytes_per_sequence": state_bytes_per_sequence(m), "mtp_layers": m.mtp_layers,
        "num_experts": moe[0].num_experts if moe else 0, "experts_per_tok": moe[0].experts_per_tok if moe else 0,
        "moe_layers": len(moe), "kv_dtype": kv_dtype, "kv_bytes_per_token": kv_bytes_per_token(m, kv_dtype),
        "weight_bytes": weight_bytes(m), "quantization": {"dense": m.quantization.dense,
                                                          "expert": m.quantization.expert,
                                                          "embed": m.quantization.embed},
    }


def hardware_summary(name) -> dict:
    """A chip or system: chips, scale-up domain, peak FLOP/s per dtype, HBM, links, power and price."""
    hw = hardware_of(name)
    c = hw.chip
    return {"name": hw.name, "chip": c.name, "display_name": c.display_name, "num_chips": hw.num_chips,
            "scale_up_domain_size": hw.scale_up_domain_size, "peak_flops_per_s": {
                **{d: None for d in ("bf16", "fp8", "fp4", "int8")}, **c.peak_flops_per_s},
            "hbm_bytes": c.hbm_bytes, "hbm_bytes_per_s": c.hbm_bytes_per_s,
            "scale_up_bytes_per_s": c.scale_up.bytes_per_s, "scale_out_bytes_per_s": c.scale_out.bytes_per_s,
            "scale_up_latency_s": c.scale_up.latency_s, "scale_out_latency_s": c.scale_out.latency_s,
            "tdp_w": c.tdp_w, "usd_per_chip_hour": hw.usd_per_chip_hour, "preliminary": hw.preliminary,
            **({"hardware_overrides": [o.as_dict() for o in hw.overrides]} if hw.overrides else {})}


def hardware_names() -> list[str]:
    return loader.chip_names() + loader.system_names()


@door()
def models() -> Result:
    rows = tuple(model_summary(n) for n in loader.model_names())
    return Result("models", "models", rows, MODEL_COLUMNS, rows_key="")


@door()
def model(name: "str | ModelArch", kv_dtype: str = "bf16") -> Result:
    row = model_summary(name, kv_dtype)
    return Record("model", row["name"], (row,), tuple(row))


@door()
def hardware(name=None) -> Result:
    if name:
        row = hardware_summary(name)
        return Record("hardware", hardware_of(name).label(), (row,), tuple(row))
    rows = tuple({**r, "bf16_flops_per_s": r["peak_flops_per_s"].get("bf16")}
                 for r in map(hardware_summary, hardware_names()))
    return Result("hardware", "hardware", rows, HARDWARE_COLUMNS, rows_key="")
