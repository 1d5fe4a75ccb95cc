"""Helpers of the integration tests: the quick-start scripts run as programs of their own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent / "scripts"


def run_script(name: str, *args: str, timeout_s: float = 540) -> str:
    """Run ``scripts/<name>`` with this interpreter; its output (it must exit 0)."""
    env = dict(os.environ, AUTOPROF_FINISH_TIMEOUT_S="300", TOKENIZERS_PARALLELISM="false",
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    proc = subprocess.run([sys.executable, str(SCRIPTS / name), *args], env=env,
                          capture_output=True, text=True, timeout=timeout_s)
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise AssertionError(f"{name} exited {proc.returncode}:\n{output[-4000:]}")
    return output


def run_dir_of(output: str) -> Path:
    """The ``RUN_DIR=...`` line a script prints."""
    lines = [line for line in output.splitlines() if line.startswith("RUN_DIR=")]
    assert lines, f"no RUN_DIR line in:\n{output[-3000:]}"
    return Path(lines[-1].split("=", 1)[1])
