#!/usr/bin/env bash
# The peers' own venv for benchmarks/sweep.py: llm-analysis 0.2.2 (never a dependency of tokenomy).
# Usage: bash benchmarks/peers_env.sh   (creates benchmarks/.venv-peers, git-ignored)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="$here/.venv-peers"
py="${PYTHON:-python3}"
if [ ! -x "$venv/bin/python" ]; then
  "$py" -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check "llm-analysis==0.2.2"
"$venv/bin/python" -c "import llm_analysis, importlib.metadata as m; print('llm-analysis', m.version('llm-analysis'))"
