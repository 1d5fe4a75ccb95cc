#!/usr/bin/env bash
# Runs the whole test suite (CPU; GPU tests are skipped without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if ! command -v chromium >/dev/null 2>&1; then
  echo "note: chromium not found; the real-browser test will be skipped (apt-get install -y chromium)"
fi
SCREENSHOT_DIR="${SCREENSHOT_DIR:-artifacts}" .venv/bin/python -m pytest -q tests "$@"
