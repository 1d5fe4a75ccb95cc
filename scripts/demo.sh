#!/usr/bin/env bash
# The main job: set up, profile the seed experiment (matmul_add at 64x64 and 4096x4096),
# print autoprof's verdict for each, then open the viewer on ./traces.
# AUTOPROF_DEMO_NO_VIEWER=1 stops before starting the viewer (used by the tests).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export AUTOPROF_DIR="${AUTOPROF_DIR:-traces}"
for size in 64 4096; do
  .venv/bin/python examples/matmul_add.py --size "$size" --out-dir "$AUTOPROF_DIR"
done
for run in $(ls -d "$AUTOPROF_DIR"/matmul_add/*/ | tail -n 2); do
  .venv/bin/autoprof summary "$run" || true
done
if [ "${AUTOPROF_DEMO_NO_VIEWER:-0}" = "1" ]; then
  exit 0
fi
echo "Opening the viewer on $AUTOPROF_DIR (http://127.0.0.1:8501; Ctrl+C stops it)."
echo "Without a GPU both runs are cpu-only; the same experiment recorded on an NVIDIA H200"
echo "(64: overhead-bound, 4096: compute-bound) ships in traces/examples/matmul_add: pick those"
echo "runs in the viewer's Run list (when it reads ./traces, the default), or run:"
echo "  .venv/bin/autoprof summary traces/examples/matmul_add"
exec .venv/bin/python -m streamlit run viewer/app.py --server.address 127.0.0.1 \
  --browser.gatherUsageStats false
