#!/usr/bin/env bash
# One-time set-up on a fresh machine: a virtual environment with autoprof and its test tools.
# torch is pinned to 2.13.0 here only because it is the known-good CPU build on this kind of
# machine (pip finds it on disk); users bring their own torch, and the package itself only
# asks for torch>=2.1.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
if ! .venv/bin/python -c "import torch" >/dev/null 2>&1; then
  .venv/bin/pip install -q torch==2.13.0
fi
# compat: the checkout itself goes on sys.path, so a folder named autoprof (without
# __init__.py) in the working folder cannot shadow the package as a namespace package
.venv/bin/pip install -q -e ".[test]" --config-settings editable_mode=compat
