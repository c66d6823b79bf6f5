"""AIPerf's ``profile_export_aiperf.json`` / ``.csv`` and GenAI-Perf's ``profile_export_genai_perf.json``.

Format read from the tools' source:
- AIPerf (ai-dynamo/aiperf): src/aiperf/common/models/export_models.py (``JsonExportData``: ``aiperf_version``,
  ``input_config`` = the user config dumped with its set fields only, and one ``JsonMetricResult`` {unit, avg,
  p50, ...} per metric tag: ``time_to_first_token``, ``inter_token_latency``, ``output_token_throughput``,
  ``input_sequence_length``, ``output_sequence_length``, ``request_count``); the config's
  ``endpoint.model_names``, ``tokenizer.name``, ``loadgen.concurrency / request_rate / request_count``
  (common/config/loadgen_config.py) and ``input.prompt.input_tokens.mean`` / ``output_tokens.mean``
  (common/config/prompt_config.py). The CSV (exporters/metrics_csv_exporter.py) holds the same statistics, one
  metric per row named by its header and unit ("Time to First Token (ms)"): a "Metric,avg,min,..." section for
  per-request metrics and a "Metric,Value" section for run totals — and no configuration, so the load comes from
  the options. AIPerf's inter token latency is per request (latency − TTFT)/(OSL − 1)
  (metrics/types/inter_token_latency_metric.py): vLLM's TPOT.
- GenAI-Perf (triton-inference-server/perf_analyzer, genai-perf/genai_perf/export_data/json_exporter.py): the
  same metric objects, and its command-line arguments flat under ``input_config`` (``model`` list,
  ``concurrency``, ``request_rate``, ``synthetic_input_tokens_mean``, ``output_tokens_mean``, ``tokenizer``).
"""

from __future__ import annotations

import csv
import io
import json

from tokenomy.validation.measured_run import MeasuredRun, Reader

# where the format is defined
FORMAT_URL = "https://github.com/ai-dynamo/aiperf/blob/main/docs/tutorials/working-with-profile-exports.md"
TOOL = "aiperf"  # GenAI-Perf's successor; both issue and measure requests the same way (same metric definitions)
METRIC_TAGS = {"time_to_first_token": "ttft", "inter_token_latency": "tpot", "output_token_throughput": "tput",
               "input_sequence_length": "isl", "output_sequence_length": "osl"}
HEADERS = {"time to first token": "time_to_first_token", "inter token latency": "inter_token_latency",
           "output token throughput": "output_token_throughput", "input sequence length": "input_sequence_length",
           "output sequence length": "output_sequence_length"}  # the CSV's metric headers -> the JSON's tags
TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0}


def is_aiperf(obj) -> bool:
    return (isinstance(obj, dict) and isinstance(obj.get("time_to_first_token"), dict)
            and ("aiperf_version" in obj or "input_config" in obj))


def _avg(r: Reader, obj: dict, tag: str, required: bool = False) -> float | None:
    """A metric's mean in SI: times by their unit, counts and rates as they are."""
    m = obj.get(tag)
    if m is None:
        if required:
            raise r.fail(f"missing {tag}")
        return None
    r.mapping(m, tag)
    scale = TIME_UNITS.get(str(m.get("unit", "")).strip().lower(), 1.0) if tag in ("time_to_first_token",
                                                                                  "inter_token_latency") else 1.0
    return r.number(m.get("avg"), f"{tag}.avg", scale=scale, required=required)


def _config(cfg: dict) -> dict:
    """The set-up from an AIPerf (nested) or GenAI-Perf (flat) ``input_config``."""
    if "loadgen" in cfg or "endpoint" in cfg:
        load, prompt = cfg.get("loadgen") or {}, (cfg.get("input") or {}).get("prompt") or {}
        names = (cfg.get("endpoint") or {}).get("model_names") or []
        return dict(model=names[0] if names else None, tokenizer=(cfg.get("tokenizer") or {}).get("name"),
                    concurrency=load.get("concurrency"), rate=load.get("request_rate"),
                    prompts=load.get("request_count"), isl=(prompt.get("input_tokens") or {}).get("mean"),
                    osl=(prompt.get("output_tokens") or {}).get("mean"))
    names = cfg.get("model") or []
    return dict(model=names[0] if isinstance(names, list) and names else names or None, tokenizer=cfg.get("tokenizer"),
                concurrency=cfg.get("concurrency"), rate=cfg.get("request_rate"),
                prompts=cfg.get("request_count") or cfg.get("num_prompts"), isl=cfg.get("synthetic_input_tokens_mean"),
                osl=cfg.get("output_tokens_mean"))


def run_of(obj: dict, r: Reader, label: str = "run") -> MeasuredRun:
    cfg = _config(r.mapping(obj.get("input_config") or {}, "input_config"))
    if isinstance(cfg["concurrency"], list):
        raise r.fail("input_config.loadgen.concurrency is a sweep; give one run's profile_export_aiperf.json")
    isl = _avg(r, obj, "input_sequence_length") or r.number(cfg["isl"], "input_config input tokens mean")
    osl = _avg(r, obj, "output_sequence_length") or r.number(cfg["osl"], "input_config output tokens mean")
    if isl is None or osl is None:
        raise r.fail("missing input_sequence_length / output_sequence_length (the mean lengths)")
    version = obj.get("aiperf_version")
    return MeasuredRun(tool=TOOL, tool_version=f"aiperf {version}" if version else "genai-perf", label=label,
                       model_id=cfg["model"], tokenizer=cfg["tokenizer"],
                       concurrency=r.count(cfg["concurrency"], "input_config concurrency"),
                       request_rate=r.rate(cfg["rate"], "input_config request_rate"),
                       num_prompts=r.count(cfg["prompts"], "input_config request_count"), isl=isl, osl=osl,
                       ttft_s=_avg(r, obj, "time_to_first_token"), tpot_s=_avg(r, obj, "inter_token_latency"),
                       output_tokens_per_s=_avg(r, obj, "output_token_throughput"))


def read_json(text: str, r: Reader) -> list[MeasuredRun]:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise r.fail(f"not JSON ({e.msg}, line {e.lineno})") from None
    return [run_of(r.mapping(obj, "the file"), r)]


def _name_unit(cell: str) -> tuple[str, str]:
    """'Time to First Token (ms)' -> ('time to first token', 'ms')."""
    name, _, unit = cell.partition("(")
    return name.strip().lower(), unit.rstrip(")").strip().lower()


def read_csv(text: str, r: Reader) -> list[MeasuredRun]:
    """The CSV's rows as the JSON's metric objects {unit, avg}, then read as one run without configuration."""
    metrics: dict[str, dict] = {}
    col = None
    for row in csv.reader(io.StringIO(text)):
        if not row or not row[0].strip():
            continue
        if row[0].strip() == "Metric":  # a section header: "avg" (per-request stats) or "Value" (run totals)
            heads = [h.strip().lower() for h in row]
            col = heads.index("avg") if "avg" in heads else heads.index("value") if "value" in heads else None
            continue
        name, unit = _name_unit(row[0])
        if name in HEADERS and col is not None and col < len(row):
            metrics[HEADERS[name]] = {"unit": unit, "avg": row[col]}
    if "time_to_first_token" not in metrics and "output_token_throughput" not in metrics:
        raise r.fail("no 'Time to First Token' or 'Output Token Throughput' row: not an AIPerf profile export CSV")
    return [run_of({**metrics, "input_config": {}}, r)]
