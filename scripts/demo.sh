#!/usr/bin/env bash
# Install pypto-sim into .venv and run the main job: the precision-workflow demo on the simulator.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e .
export PYPTO_PROG_BUILD_DIR="${PYPTO_PROG_BUILD_DIR:-$(mktemp -d)}"
.venv/bin/python -m pypto.demo "$@"
