"""Launch commands (answers/launch.py): every emitted command parses back against its engine's flag table
(catalog/engines/flags/<engine>.toml) with an argparse parser built from that table, every config key is in the
table, the layout in the command is the plan's (read back by each engine's documented semantics, written here
independently of answers/launch_layout.py), a disaggregated plan gets two pools and a router, and plans an engine
cannot run are refused in one line."""

from __future__ import annotations

import argparse
import json
import re
import shlex

import pytest
import yaml

import tokenomy as tk
from tokenomy.answers.launch import launch_commands
from tokenomy.catalog import loader

ENGINES = ("vllm", "sglang", "trtllm")


def _type(flag):
    if flag.format == "int":
        return int
    if flag.format == "fraction":
        def fraction(s):
            v = float(s)
            if not 0 < v <= 1:
                raise argparse.ArgumentTypeError(f"{s} not in (0, 1]")
            return v
        return fraction
    if flag.format == "json":
        return json.loads
    return str


def parser(flags: dict, positional: bool) -> argparse.ArgumentParser:
    """argparse from a flag table: only the table's flags, each in its documented format."""
    p = argparse.ArgumentParser(allow_abbrev=False, exit_on_error=False, add_help=False)
    if positional:
        p.add_argument("model")
    for name, f in flags.items():
        if not f.name:
            continue
        if f.format == "flag":
            p.add_argument(f.name, dest=name, action="store_true")
        elif f.format == "choice":
            p.add_argument(f.name, dest=name, choices=f.choices)
        else:
            p.add_argument(f.name, dest=name, type=_type(f), nargs="+" if "nargs +" in f.source else None)
    return p


def expand(words: list[str], env: dict) -> list[str]:
    return [re.sub(r"\$([A-Z_]+)", lambda m: env[m.group(1)], w) for w in words]


def keys(d: dict, prefix: str = "") -> set[str]:
    out = set()
    for k, v in d.items():
        out |= keys(v, f"{prefix}{k}.") if isinstance(v, dict) else {f"{prefix}{k}"}
    return out


ENV = {"HOST": "0.0.0.0", "PORT": "8000", "PREFILL_HOST": "10.0.0.1", "PREFILL_PORT": "8100",
       "DECODE_HOST": "10.0.0.2", "DECODE_PORT": "8200", "ROUTER_PORT": "8000"}


def parse_block(b: dict) -> argparse.Namespace:
    """A block's command read back: the text's command is the argv, every word a flag of the table (or its value),
    the YAML heredoc is the config, every config key one of the table's keys; the parsed namespace."""
    text = b["text"]
    cmd = text.split("EOF\n")[-1] if b["config"] else text
    cmd = "\n".join(line for line in cmd.splitlines() if not line.startswith("#") and "placeholders" not in line)
    assert shlex.split(cmd.replace("\\\n", " ")) == b["argv"]
    for k, v in b["placeholders"].items():
        assert re.search(rf"\b{k}={v}\b", text)  # each placeholder is assigned where the block starts
    argv = expand(b["argv"], ENV)
    engine = b["backend"] or b["engine"]
    table = loader.engine_flags(engine)
    if b["pool"] == "router":
        flags = table.router.flags if b["engine"] != "dynamo" else loader.engine_flags("dynamo").flags
        launch = (table.router.launch if b["engine"] != "dynamo" else loader.engine_flags("dynamo").launch).split()
        allowed_keys = {f.key for f in flags.values() if f.key}
        positional = False
    else:
        flags, allowed_keys = dict(table.flags), {f.key for f in table.flags.values() if f.key}
        if b["engine"] == "dynamo":
            w = loader.engine_flags("dynamo").workers[engine]
            launch = w.launch.split()
            extra = {"model": w.model, "role": w.role} | ({"config": w.config_flag} if w.config_flag else {})
            names = {f.name for f in flags.values()}
            flags |= {k: type(table.flags["host"])(name=n, format="str", source="dynamo worker")
                      for k, n in extra.items() if n not in names}
            positional = False
        else:
            launch = table.launch.split()
            if table.model:
                flags["model"] = type(table.flags["host"])(name=table.model, format="str", source="model flag")
            positional = not table.model
    assert argv[:len(launch)] == launch
    if b["config"]:
        body = text.split("<<EOF\n")[1].split("\nEOF")[0]
        body = re.sub(r"\$([A-Z_]+)", lambda m: ENV[m.group(1)], body)
        config = yaml.safe_load(body)
        assert keys(config) <= allowed_keys, keys(config) - allowed_keys
        assert yaml.safe_load(yaml.safe_dump(b["config"])) == json.loads(json.dumps(b["config"]))
    return parser(flags, positional).parse_args(argv[len(launch):])


def layout_back(engine: str, ns: argparse.Namespace, config: dict | None) -> dict:
    """(tp, ep, pp, chips per server, attn_dp) of a parsed server command, by the engine's documented semantics."""
    cfg = config or {}
    get = lambda k, d=1: getattr(ns, k, None) or d  # noqa: E731
    if engine == "vllm":  # EP size = TP x DP, experts whole per rank; attention TP = tensor-parallel-size
        tp, dp = get("tp"), get("dp")
        if get("ep", False):
            return {"tp": 1, "ep": tp * dp, "pp": get("pp"), "server_chips": tp * dp * get("pp"), "attn_dp": dp > 1}
        return {"tp": tp, "ep": 1, "pp": get("pp"), "server_chips": tp * dp * get("pp"), "replicas_inside": dp}
    if engine == "sglang":  # tp-size = GPUs of a stage; MoE TP = tp / ep; attention TP = tp / dp under dp-attention
        tp, ep, dp = get("tp"), get("ep"), get("dp")
        if get("attn_dp", False):
            return {"tp": tp // dp, "ep": ep, "pp": get("pp"), "server_chips": tp * get("pp"), "attn_dp": True}
        return {"tp": tp // ep, "ep": ep, "pp": get("pp"), "server_chips": tp * dp * get("pp"), "replicas_inside": dp}
    tp = get("tp", cfg.get("tensor_parallel_size", 1))
    ep = get("ep", cfg.get("moe_expert_parallel_size", 1))
    pp = get("pp", cfg.get("pipeline_parallel_size", 1))
    return {"tp": tp // ep, "ep": ep, "pp": pp, "server_chips": tp * pp, "attn_dp": cfg.get("enable_attention_dp", False)}


def check_round_trip(block: dict, lay: dict, chips: int) -> None:
    engine = block["backend"] or block["engine"]
    back = layout_back(engine, parse_block(block), block["config"])
    assert (back["tp"], back["ep"], back["pp"]) == (lay["tp"], lay["ep"], lay["pp"])
    if lay["ep"] > 1:
        assert back.get("attn_dp", False) == lay["attn_dp"]
    assert back["server_chips"] * block["replicas"] == chips == lay["chips"] * (chips // lay["chips"])


def test_tables_are_at_the_profile_version_and_cited():
    for e in ENGINES:
        t = loader.engine_flags(e)
        assert t.version == loader.engine_file(e).version
        for f in t.flags.values():
            assert "http" in f.source or ".py" in f.source or ".md" in f.source or ".yaml" in f.source, f
    assert set(loader.engine_flag_names()) == {"vllm", "sglang", "trtllm", "dynamo"}
    assert set(loader.engine_flags("dynamo").workers) == set(ENGINES)


@pytest.mark.parametrize("engine", ENGINES)
def test_serve_commands_parse_and_round_trip(engine):
    cases = [("llama-3.1-8b", "hgx-h100-8", dict(tp=2, dp=2)), ("qwen3-30b-a3b", "hgx-h100-8", dict(tp=1, ep=4))]
    if engine != "vllm":
        cases.append(("qwen3-30b-a3b", "hgx-h100-8", dict(tp=2, ep=4, attn_dp=False)))
    for model, hw, lay in cases:
        r = tk.serve(model, hw, concurrency=[16], emit=engine, **lay)
        (block,) = r.extra["launch"]
        check_round_trip(block, r.extra["plan"], r.extra["plan"]["chips"])
        ns = parse_block(block)
        # the batch cap is the engine profile's the plan ran under (catalog/engines/<engine>.toml)
        assert ns.max_batch == loader.engine_file(engine).scheduler.max_batch


def test_dynamo_workers_take_the_engine_flags():
    for engine in ENGINES:
        r = tk.serve("qwen3-30b-a3b", "hgx-h100-8", concurrency=[16], tp=1, ep=4, emit="dynamo", engine=engine)
        front, worker = r.extra["launch"]
        assert front["pool"] == "router" and front["argv"][:3] == ["python3", "-m", "dynamo.frontend"]
        parse_block(front)
        check_round_trip(worker, r.extra["plan"], 4)


@pytest.mark.parametrize("emit", ["trtllm", "dynamo"])
def test_delayed_batching_reaches_the_trtllm_config(emit):
    """The hold the plan was served under is in the YAML TorchLlmArgs reads (batch_wait_timeout_iters,
    batch_wait_max_tokens_ratio); off, neither key is written (the engine's default, 0)."""
    kw = dict(concurrency=[16], engine="trtllm", emit=emit)
    on = tk.serve("llama-3.1-8b", "h100-sxm", batch_wait_iters=40, batch_wait_tokens_ratio=0.8, **kw)
    config = on.extra["launch"][-1]["config"]
    assert config["batch_wait_timeout_iters"] == 40 and config["batch_wait_max_tokens_ratio"] == 0.8
    assert "batch_wait_max_tokens_ratio: 0.8" in on.extra["launch"][-1]["text"]
    off = tk.serve("llama-3.1-8b", "h100-sxm", **kw).extra["launch"][-1]["config"]
    assert not {"batch_wait_timeout_iters", "batch_wait_max_tokens_ratio"} & set(off)


@pytest.fixture(scope="module")
def disagg():
    return {e: tk.plan("llama-3.1-70b", "hgx-h200-8", chips=8, mode="disagg", concurrency=[32], engine=e, emit=e)
            for e in ENGINES}


@pytest.mark.parametrize("engine", ENGINES)
def test_disagg_emits_two_pools_and_a_router(disagg, engine):
    r = disagg[engine]
    blocks = r.extra["launch"]
    assert [b["pool"] for b in blocks] == ["prefill", "decode", "router"]
    best = r.extra["best"] or r.extra["closest"]
    for b, lay, n in zip(blocks, (best["prefill_plan"], best["decode_plan"]), (best["prefill_chips"],
                                                                                 best["decode_chips"])):
        check_round_trip(b, lay, n)
    router = parse_block(blocks[2])
    text = blocks[2]["text"]
    assert "$PREFILL_PORT" in text and "$DECODE_PORT" in text  # it fronts both pools
    assert router is not None
    if engine == "sglang":
        assert [parse_block(b).disagg_role for b in blocks[:2]] == ["prefill", "decode"]


def test_plan_agg_and_cli_json_agree():
    r = tk.plan("llama-3.1-8b", "h100-sxm", chips=4, concurrency=[16], emit="sglang")
    (block,) = r.extra["launch"]
    best = r.extra["best"]
    check_round_trip(block, best, best["chips"])


@pytest.mark.parametrize("call, why", [
    (lambda: tk.serve("qwen3-30b-a3b", "hgx-h100-8", concurrency=[16], tp=2, ep=4, emit="vllm"),
     "keeps each expert whole"),
    (lambda: tk.serve("qwen3-30b-a3b", "hgx-h100-8", concurrency=[16], tp=2, ep=4, attn_dp=True, emit="trtllm"),
     "attention unsplit"),
    (lambda: tk.serve("llama-3.1-8b", "h100-sxm", concurrency=[16], weight_dtype="fp8", emit="trtllm"),
     "pre-quantized fp8 checkpoint"),
    (lambda: tk.serve("llama-3.1-8b", "h100-sxm", concurrency=[16], weight_dtype="fp4", emit="vllm"),
     "pre-quantized fp4 checkpoint"),
    (lambda: tk.serve("llama-3.1-8b", "h100-sxm", concurrency=[16], kv_dtype="fp4", emit="sglang"),
     "KV cache fp4"),
    (lambda: tk.serve("llama-3.1-8b", "hgx-h100-8", concurrency=[16], tp=8, kv_batch=True, emit="sglang"),
     "KV batch-sharding"),
    (lambda: tk.serve("llama-3.1-8b", "h100-sxm", concurrency=[16], engine="vllm", emit="sglang"),
     "modelled under vllm"),
    (lambda: tk.plan("llama-3.1-8b", "h100-sxm", emit="ollama"), "allowed: vllm, sglang, trtllm, dynamo"),
])
def test_refusals_say_why_in_one_line(call, why):
    with pytest.raises(ValueError) as e:
        call()
    msg = str(e.value)
    assert msg.startswith("emit: ") and why in msg and "\n" not in msg


def test_online_fp8_and_kv_fp8_use_the_engine_spelling():
    (b,) = launch_commands("llama-3.1-8b", emit="sglang", layout=tk.serve(
        "llama-3.1-8b", "h100-sxm", concurrency=[4]).extra["plan"], weight_dtype="fp8", kv_dtype="fp8")
    ns = parse_block(b)
    assert (ns.quantization, ns.kv_dtype) == ("fp8", "fp8_e4m3")
