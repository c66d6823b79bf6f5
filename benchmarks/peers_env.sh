#!/usr/bin/env bash
# The peers' own venvs for benchmarks/sweep.py (never dependencies of tokenomy), each from PyPI:
#   benchmarks/.venv-peers          llm-analysis 0.2.2
#   benchmarks/.venv-aiconfigurator aiconfigurator 0.12.0 (NVIDIA; run as a black box for speed only: its packaged
#                                   performance samples are never read, fitted to or compared against)
# Vidur (vidur 0.0.26 on PyPI) installs but does not run offline: its execution-time predictor reads its profiling
# data from a Hugging Face dataset at run time (--*_model_profiling_dataset, default project-vajra/...), and the pip
# package ships none, so it is not benchmarked (nothing at run time may reach the network).
# Usage: bash benchmarks/peers_env.sh [llm-analysis|aiconfigurator ...]   (default: both; git-ignored venvs)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
py="${PYTHON:-python3}"

venv_with() {  # venv_with DIR PACKAGE==VERSION IMPORT
  local venv="$here/$1"
  if [ ! -x "$venv/bin/python" ]; then
    "$py" -m venv "$venv"
  fi
  "$venv/bin/pip" install --quiet --disable-pip-version-check "$2"
  "$venv/bin/python" -c "import $3, importlib.metadata as m; print('$2 installed:', m.version('${2%%==*}'))"
}

for peer in "${@:-llm-analysis aiconfigurator}"; do
  for p in $peer; do
    case "$p" in
      llm-analysis) venv_with .venv-peers "llm-analysis==0.2.2" llm_analysis ;;
      aiconfigurator) venv_with .venv-aiconfigurator "aiconfigurator==0.12.0" aiconfigurator ;;
      *) echo "unknown peer: $p (llm-analysis, aiconfigurator)" >&2; exit 2 ;;
    esac
  done
done
