#!/usr/bin/env bash
# The validation lab (docs/validation.md): regenerates benchmarks/validation/results/*.json,
# the predictions against the fixes timed by hand on recorded GPU runs, then runs the lab's
# own checks. Not part of scripts/test.sh. Arguments go to `python -m benchmarks.validation`
# (e.g. --sets gpu_h200_truth_heldout13 --tables as_shown).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python -m benchmarks.validation "$@"
.venv/bin/python -m pytest -q benchmarks/validation/checks -m "not gpu"
