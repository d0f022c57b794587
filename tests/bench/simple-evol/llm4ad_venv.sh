#!/bin/bash
# tests/bench/simple-evol/llm4ad_venv.sh [VENV]: the benchmark-only venv of
# llm4ad 1.11 (PyPI), the platform whose EoH and FunSearch the faithfulness
# row runs. llm4ad pins numpy < 2 and pulls torch, wandb and a GUI toolkit it
# does not need for EoH and FunSearch: it is installed without its
# dependencies, beside the few its methods import.
set -eu
VENV=${1:-build/bench-venv-llm4ad}
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install -q "numpy<2" scipy h5py tqdm requests pytz
"$VENV/bin/pip" install -q --no-deps llm4ad==1.11
"$VENV/bin/python" -c "import llm4ad.method.eoh, llm4ad.method.funsearch"
echo "$VENV"
