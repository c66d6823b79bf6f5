#!/usr/bin/env bash
# Builds the benchmark's own environment for benchmarks/reversible.py: the CPU wheel of
# torch 2.13.0 (the project's pin), numpy, and the two anchors, revlib and memcnn.
# memcnn goes in with --no-deps: its declared dependencies pull a multi-GB CUDA build of
# torch (and tensorboard etc.) that the benchmark does not use; it needs only torch and
# numpy at import time. tokenomy is installed editable (its base dependencies only).
#   usage: bash benchmarks/reversible_env.sh [VENV_DIR]   (default build/reversible-bench-venv)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${1:-build/reversible-bench-venv}"
PY="${PY:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
"$VENV/bin/pip" install --quiet torch==2.13.0 numpy
"$VENV/bin/pip" install --quiet -e .   # tokenomy and its light dependencies (no torch extra)
"$VENV/bin/pip" install --quiet revlib==1.7.2
"$VENV/bin/pip" install --quiet --no-deps memcnn==1.5.2
"$VENV/bin/python" - <<'PY'
import torch, revlib, memcnn  # noqa: F401  (fails loudly if an anchor did not install)
print(f"benchmark env ready: torch {torch.__version__}, revlib, memcnn {memcnn.__version__}")
PY
