"""Run inside benchmarks/.venv-peers (bash benchmarks/peers_env.sh): time llm-analysis 0.2.2 on the decode grid
benchmarks/sweep.py sends on stdin (JSON: dense models as numbers, tp, batches, contexts, samples), one
configuration per call, as its API runs them, after one untimed warm-up call. Prints JSON {"configs": n,
"seconds": t, "fit": configs that fit, "fit_seconds": their time}: llm-analysis refuses a configuration that does
not fit by raising (its prefill activation check), sooner than it answers one that fits, so the rate over the
configurations that fit is given beside the rate over all (benchmarks/sweep.py prints both)."""

import json
import logging
import sys
import time

import numpy as np
from llm_analysis.analysis import LLMAnalysis, ParallelismConfig
from llm_analysis.config import ModelConfig, get_dtype_config_by_name, get_gpu_config_by_name

logging.disable(logging.CRITICAL)


def one(m, gpu, dtype, tp, b, c) -> bool:
    """One configuration as a user runs it; False where llm-analysis refuses it (it does not fit)."""
    a = LLMAnalysis(m, gpu, dtype, ParallelismConfig(tp_size=tp), flops_efficiency=0.5, hbm_memory_efficiency=0.9)
    try:
        a.inference(batch_size_per_gpu=b, seq_len=c, num_tokens_to_generate=1)
    except Exception:  # noqa: BLE001  (configs that do not fit raise; they still cost the time)
        return False
    return True


def main() -> None:
    spec = json.load(sys.stdin)
    gpu = get_gpu_config_by_name(spec["gpu"])
    dtype = get_dtype_config_by_name("w16a16e16")
    models = [ModelConfig(**m) for m in spec["models"]]
    rng = np.random.default_rng(0)
    picks = [(models[rng.integers(len(models))], int(rng.choice(spec["tp"])), int(rng.choice(spec["batch"])),
              int(rng.choice(spec["context"]))) for _ in range(spec["samples"])]
    one(models[0], gpu, dtype, 1, 1, 1024)  # warm-up: first-call costs are no configuration's
    fit, fit_s = 0, 0.0
    t0 = time.perf_counter()
    for m, tp, b, c in picks:
        t = time.perf_counter()
        if one(m, gpu, dtype, tp, b, c):
            fit, fit_s = fit + 1, fit_s + (time.perf_counter() - t)
    seconds = time.perf_counter() - t0
    print(json.dumps({"configs": len(picks), "seconds": seconds, "fit": fit, "fit_seconds": fit_s}))


if __name__ == "__main__":
    main()
