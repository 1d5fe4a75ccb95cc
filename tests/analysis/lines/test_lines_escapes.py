"""``autoprof lines`` prints labels from a trace as the summary and the diff do: control and
escape sequences escaped, never sent raw to the terminal."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pandas as pd

from autoprof.analysis.report.lines import render_lines

ESC = "\x1b]0;owned\x07\x1b[2J"  # retitle the terminal, clear the screen


def _lines(label: str) -> Any:
    row = {"source": f"train{label}.py:3 (step)", "path": f"/x/train{label}.py", "line": 3,
           "function": f"step{label}", "module": f"Net{label}", "top_op": f"aten::mm{label}",
           "self_cpu_us": 10.0, "gpu_us": 5.0, "sync_us": 1.0, "syncs": 1.0, "calls": 2.0}
    return SimpleNamespace(by_line=pd.DataFrame([row]), by_library=pd.DataFrame(), available=True,
                           attribution=SimpleNamespace(has_lines=True, match_pct=90.0))


def test_control_characters_in_every_label_are_escaped():
    text = render_lines(_lines(ESC), f"run{ESC}")
    assert "\x1b" not in text and "\x07" not in text
    assert text.count("\\x1b]0;owned\\x07\\x1b[2J") == 4  # name, source, op, module
    assert all(line.isprintable() for line in text.splitlines())


def test_plain_labels_are_printed_as_they_are():
    text = render_lines(_lines(""), "run")
    assert "train.py:3 (step)  aten::mm  [Net]" in text
