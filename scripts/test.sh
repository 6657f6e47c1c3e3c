#!/usr/bin/env bash
# Install pypto-sim with its test extras into .venv and run the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
# torch first and pinned: the CPU build on local disk (an open range would pull a CUDA build)
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".[test]"
export PYPTO_PROG_BUILD_DIR="${PYPTO_PROG_BUILD_DIR:-$(mktemp -d)}"
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
