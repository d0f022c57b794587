#!/bin/bash
# tests/bench/swe-crafter/venv.sh [VENV]: the benchmark-only venv with the
# swebench package (PyPI), whose grading the benchmark runs on swe-crafter's
# status maps beside swe-crafter's own verdicts. Not used by tests.
set -eu
VENV=${1:-build/bench-venv-swebench}
if [ ! -x "$VENV/bin/python" ]; then
  /usr/bin/python3 -m venv "$VENV"
fi
"$VENV/bin/pip" install -q --upgrade pip > /dev/null
"$VENV/bin/pip" install -q "swebench>=4"
"$VENV/bin/python" -c 'import swebench; print("swebench", swebench.__version__)'
