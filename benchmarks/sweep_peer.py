"""Run inside benchmarks/.venv-peers (bash benchmarks/peers_env.sh): time llm-analysis 0.2.2 on the decode grid
benchmarks/sweep.py sends on stdin (JSON: dense models as numbers, tp, batches, contexts, samples), one
configuration per call, as its API runs them. Prints JSON {"configs": n, "seconds": t}."""

import json
import logging
import sys
import time

import numpy as np
from llm_analysis.analysis import LLMAnalysis, ParallelismConfig
from llm_analysis.config import ModelConfig, get_dtype_config_by_name, get_gpu_config_by_name

logging.disable(logging.CRITICAL)


def main() -> None:
    spec = json.load(sys.stdin)
    gpu = get_gpu_config_by_name(spec["gpu"])
    dtype = get_dtype_config_by_name("w16a16e16")
    models = [ModelConfig(**m) for m in spec["models"]]
    rng = np.random.default_rng(0)
    picks = [(models[rng.integers(len(models))], int(rng.choice(spec["tp"])), int(rng.choice(spec["batch"])),
              int(rng.choice(spec["context"]))) for _ in range(spec["samples"])]
    t0 = time.perf_counter()
    for m, tp, b, c in picks:
        a = LLMAnalysis(m, gpu, dtype, ParallelismConfig(tp_size=tp), flops_efficiency=0.5, hbm_memory_efficiency=0.9)
        try:
            a.inference(batch_size_per_gpu=b, seq_len=c, num_tokens_to_generate=1)
        except Exception:  # noqa: BLE001  (configs that do not fit raise; they still cost the time)
            pass
    print(json.dumps({"configs": len(picks), "seconds": time.perf_counter() - t0}))


if __name__ == "__main__":
    main()
