"""The source-lines analysis on hand-built traces: which frames are the user's, the
innermost labels of an op, and the match by order and name when the sequences differ."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest

from autoprof.analysis.metrics.lines.match import attribute
from autoprof.analysis.metrics.lines.table import common_module, split_source
from autoprof.analysis.metrics.lines.trace import LinesOp, read_lines_trace, user_frame


def test_user_frames() -> None:
    assert user_frame("train.py(12): step") == "train.py:12 (step)"
    assert user_frame("/home/me/train.py(3): <module>") == "/home/me/train.py:3 (<module>)"
    for not_user in ("torch/nn/modules/linear.py(130): forward", "enum.py(1230): __hash__",
                     "/usr/lib/python3.12/contextlib.py(141): __exit__",
                     "/x/site-packages/transformers/m.py(9): f", "<built-in method sum>",
                     "nn.Module: Linear_0", "/work/autoprof/record/lines.py(58): _pre"):
        assert user_frame(not_user) == "", not_user


def _write(path: Path, events: list[dict[str, object]]) -> Path:
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": events}, f)
    return path


def test_innermost_labels(tmp_path: Path) -> None:
    def x(cat: str, name: str, ts: float, dur: float) -> dict[str, object]:
        return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "tid": 7, "pid": 1}

    path = _write(tmp_path / "lines.w.json.gz", [
        x("python_function", "train.py(10): step", 0, 100),
        x("user_annotation", "autoprof::module Net.fc", 5, 40),
        x("user_annotation", "autoprof::line /a/train.py:12 (step)", 10, 30),
        x("cpu_op", "aten::linear", 11, 20),
        x("cpu_op", "aten::addmm", 12, 10),
        x("cpu_op", "aten::item", 60, 5),  # no line label: the innermost user frame
    ])
    ops = read_lines_trace(path)
    assert [(o.name, o.source, o.module) for o in ops] == [
        ("aten::linear", "/a/train.py:12 (step)", "Net.fc"),
        ("aten::addmm", "/a/train.py:12 (step)", "Net.fc"),
        ("aten::item", "train.py:10 (step)", ""),
    ]


def test_backward_on_a_device_thread_takes_its_forward_ops_line(tmp_path: Path) -> None:
    """autograd's device thread (a GPU's backward) has no user frame: a backward node takes
    the line of the forward op with its sequence number, and the ops inside it too; backward
    on the calling thread (CPU, under ``loss.backward()``) keeps its own frame."""
    def x(tid: int, cat: str, name: str, ts: float, dur: float,
          seq: tuple[int, int] | None = None) -> dict[str, object]:
        args = {"Sequence number": seq[0], "Fwd thread id": seq[1]} if seq else {}
        return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "tid": tid,
                "pid": 1, "args": args}

    path = _write(tmp_path / "lines.w.json.gz", [
        x(7, "user_annotation", "autoprof::module Net.fc", 0, 40),
        x(7, "user_annotation", "autoprof::line /a/net.py:12 (forward)", 1, 30),
        x(7, "cpu_op", "aten::addmm", 2, 10, (5, 0)),
        x(7, "user_annotation", "autoprof::line /a/train.py:30 (step)", 50, 10),
        x(7, "cpu_op", "aten::sum", 51, 5, (6, 0)),
        x(7, "python_function", "train.py(31): step", 60, 200),
        x(7, "cpu_op", "aten::ones_like", 61, 3, (7, 0)),  # under loss.backward(): its frame
        x(9, "cpu_op", "autograd::engine::evaluate_function: SumBackward0", 100, 10, (6, 1)),
        x(9, "cpu_op", "autograd::engine::evaluate_function: AddmmBackward0", 120, 40, (5, 1)),
        x(9, "cpu_op", "AddmmBackward0", 121, 30, (5, 1)),
        x(9, "cpu_op", "aten::mm", 122, 10),
        x(9, "cpu_op", "autograd::engine::evaluate_function: TBackward0", 170, 5, (99, 1)),
    ])
    got = {(o.tid, o.name): (o.source, o.module) for o in read_lines_trace(path)}
    assert got[(7, "aten::ones_like")] == ("train.py:31 (step)", "")
    assert got[(9, "autograd::engine::evaluate_function: SumBackward0")] == (
        "/a/train.py:30 (step)", "")
    assert got[(9, "autograd::engine::evaluate_function: AddmmBackward0")] == (
        "/a/net.py:12 (forward)", "Net.fc")
    assert got[(9, "AddmmBackward0")] == got[(9, "aten::mm")] == (
        "/a/net.py:12 (forward)", "Net.fc")
    # a node whose forward op the trace does not hold stays without a line
    assert got[(9, "autograd::engine::evaluate_function: TBackward0")] == ("", "")


def _events(names: list[str], steps: list[int]) -> pd.DataFrame:
    n = len(names)
    return pd.DataFrame({
        "name": names, "cat": ["cpu_op"] * n, "tid": [7] * n, "step": steps,
        "ts_us": [float(i) for i in range(n)], "self_us": [10.0] * n, "rank": [0] * n,
        "op_row": [-1] * n, "parent": [-1] * n, "dur_us": [10.0] * n,
        "lane": ["cpu"] * n, "is_gpu_work": [False] * n, "depth": [0] * n,
    })


def test_match_by_order_and_name_with_an_extra_op() -> None:
    lines = [LinesOp(7, name, float(i), f"t.py:{i} (f)", "") for i, name in
             enumerate(["aten::a", "aten::b", "aten::c"])]
    # step 1 has an extra op (a first-call copy) the lines step did not have
    events = _events(["aten::a", "aten::b", "aten::c", "aten::a", "aten::x", "aten::b",
                      "aten::c"], [0, 0, 0, 1, 1, 1, 1])
    result = attribute(events, {0: lines})
    assert result.rows["source"].to_dict() == {
        0: "t.py:0 (f)", 1: "t.py:1 (f)", 2: "t.py:2 (f)",
        3: "t.py:0 (f)", 5: "t.py:1 (f)", 6: "t.py:2 (f)"}
    assert round(result.match_pct, 3) == round(100 * 6 / 7, 3)


def test_without_lines_nothing_is_attributed_and_the_columns_are_still_checked() -> None:
    events = _events(["aten::a", "aten::b"], [0, 0])
    result = attribute(events, {})
    assert result.rows.empty and list(result.rows.columns) == ["source", "module", "library"]
    assert result.match_pct == 0.0 and not result.has_lines
    assert attribute(events, {}, {"graph": {}}).rows.empty  # a graph without kernels
    with pytest.raises(ValueError, match="self_us"):
        attribute(events.drop(columns=["self_us"]), {})


def test_helpers() -> None:
    assert split_source("/a/b.py:42 (step)") == ("/a/b.py", 42, "step")
    assert split_source("odd") == ("odd", -1, "")
    assert common_module(pd.Series(["M.h.0.attn", "M.h.1.attn", ""])) == "M.h"
    assert common_module(pd.Series(["", ""])) == ""


def test_diagnostics_name_the_lines_of_their_ops() -> None:
    from autoprof.analysis.metrics.lines.match import Attribution
    from autoprof.analysis.metrics.lines.source import SourceLines, with_diagnostic_lines
    from autoprof.analysis.report.lines import diagnostic_sources

    lines = SourceLines(None, pd.DataFrame())
    rows = pd.DataFrame({"source": ["t.py:3 (f)"], "module": [""]}, index=[0])
    lines.__dict__["attribution"] = Attribution(rows, 100.0, True)
    lines.__dict__["by_op"] = pd.DataFrame(
        {"source": ["t.py:3 (f)"], "module": [""], "line_pct": [100.0]},
        index=pd.Index(["aten::item"], name="name"))
    diags = [{"id": "sync", "evidence": {"ops": [{"name": "aten::item", "us": 5.0}]}},
             {"id": "other", "evidence": {"n": 3}}]
    out = with_diagnostic_lines(diags, lines)
    assert out[0]["evidence"]["sources"] == {"aten::item": "t.py:3 (f)"}
    assert out[1] == diags[1]
    assert diagnostic_sources(out[0]) == {"aten::item": "t.py:3 (f)"}
