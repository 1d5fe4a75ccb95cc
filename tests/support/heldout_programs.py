"""The held-out GPU sets' shared check: every program and fix a set times (and records) is
valid Python, at full size for CUDA and tiny for the CPU. Imports ``benchmarks/gpu``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

GPU_BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu"
if str(GPU_BENCH) not in sys.path:
    sys.path.insert(0, str(GPU_BENCH))

from heldout_driver import record_code, timer_code  # noqa: E402


def compile_program(name: str, case: dict[str, Any], dry: bool, recorded: bool = True) -> None:
    """Compile the timing process of the program as written and of each fix, and (with
    ``recorded``) its recording process; a SyntaxError names the program and the fix."""
    device = "cpu" if dry else "cuda"
    for fix in [None, *case["fixes"]]:
        compile(timer_code(case, fix, device, dry), f"{name}/{fix}", "exec")
    if recorded:
        compile(record_code(name, case, device, dry, 3), f"{name}/record", "exec")
