#!/usr/bin/env bash
# Create benchmarks/.venv-hta: a separate virtualenv holding Holistic Trace Analysis, the
# baseline of target 4 in benchmarks/run.py. It is kept apart from the project's .venv so
# it can never change that venv's pins or pull in torch. Every package is pinned and
# installed with --no-deps (see requirements-hta.txt), so pip resolves nothing by itself.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="$here/.venv-hta"
python="${PYTHON:-python3}"
if [[ ! -x "$venv/bin/python" ]]; then
    "$python" -m venv "$venv"
fi
"$venv/bin/pip" install -q --no-deps -r "$here/requirements-hta.txt"
# Refuse a venv where torch slipped in: HTA must be measured without it.
if "$venv/bin/python" -c "import torch" 2>/dev/null; then
    echo "setup_hta.sh: torch is importable in $venv; remove it" >&2
    exit 1
fi
"$venv/bin/python" -c "from hta.trace_analysis import TraceAnalysis; import hta; print('HTA ready:', '$venv')"
