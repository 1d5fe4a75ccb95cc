#!/usr/bin/env bash
# Runs the whole test suite (CPU; GPU tests are skipped without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if ! command -v chromium >/dev/null 2>&1; then
  echo "note: chromium not found; the real-browser test will be skipped (apt-get install -y chromium)"
fi
# --quick: the quick tier (tests/support/tiers.py: every layer, no slow, process or browser
# test), a few minutes on two cores; other arguments go to pytest either way
if [ "${1:-}" = "--quick" ]; then
  shift
  mapfile -t quick < <(.venv/bin/python -c "import sys; sys.path.insert(0, 'tests')
from support.tiers import QUICK_FILES; print(*sorted(QUICK_FILES), sep=chr(10))")
  exec .venv/bin/python -m pytest -q "${quick[@]}" -m "not slow and not browser" "$@"
fi
# the whole suite on two pytest-xdist workers, a file at a time (a module's recording is made
# once), the files that read every committed run on one (tests/support/xdist_scopes.py); then
# the files that time things and judge the times, alone (`serial`, tests/support/tiers.py).
# `-n 0` among the arguments runs the first part in one process
export SCREENSHOT_DIR="${SCREENSHOT_DIR:-artifacts}"
status=0
.venv/bin/python -m pytest -q -n 2 --dist loadfile -m "not serial" tests "$@" || status=$?
serial=0
.venv/bin/python -m pytest -q -m serial tests "$@" || serial=$?
# 5: no test selected (arguments that pick no timed file)
if [ "$serial" -ne 0 ] && [ "$serial" -ne 5 ]; then status=$serial; fi
exit "$status"
