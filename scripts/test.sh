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
# PYPTO_TEST_WORKERS=N: run on N pytest-xdist workers (--dist loadgroup keeps each xdist_group, e.g.
# the lockstep record and its check, in one worker). Opt-in until the whole suite has been run
# under it (CONTRIBUTING.md, "Test tiers"); the fast tier is checked under -n 2.
XDIST=()
if [ -n "${PYPTO_TEST_WORKERS:-}" ] && [ "${PYPTO_TEST_WORKERS}" != "0" ]; then
  XDIST=(-n "$PYPTO_TEST_WORKERS" --dist loadgroup)
fi
.venv/bin/python -m pytest -q -p no:cacheprovider ${XDIST[@]+"${XDIST[@]}"} "$@"
