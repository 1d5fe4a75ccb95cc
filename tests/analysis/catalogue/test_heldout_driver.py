"""benchmarks/gpu/heldout_driver.py's process runner: a timing printed whole is kept when the
process then fails on its way out (a gloo group torn down by the interpreter's exit), with
the exit status; a process that fails before its result is an error."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks" / "gpu"))

from heldout_driver import run_process  # noqa: E402

ENV = dict(os.environ)


def test_a_timing_printed_before_the_process_aborts_is_kept_with_its_status() -> None:
    code = ("import json, os, sys\nprint(json.dumps({'ms_per_iter': 1.5}))\n"
            "sys.stdout.flush()\nos.abort()")
    result = run_process(code, ENV, timeout_s=30)
    assert result["ms_per_iter"] == 1.5 and result["exit_status"] != 0


def test_a_process_that_fails_before_its_result_is_an_error() -> None:
    code = "import json\nprint(json.dumps({'warm': True}))\nraise SystemExit('capture failed')"
    assert run_process(code, ENV, timeout_s=30) == {"error": "capture failed"}


def test_a_clean_exit_returns_the_last_line() -> None:
    result = run_process("print('noise')\nprint('{\"recorded\": true}')", ENV, timeout_s=30)
    assert result == {"recorded": True}
