"""Naming where an op runs when one line is not enough: the module of an op spread over every
layer is their shared shape and count, never one layer's path; and a line that calls into a
library (``model.generate()``, ``trainer.train()``) also names the library frames nearest its
ops, so its time is split by the library code that called torch."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
from support.events_table import events_table, kineto_event

from autoprof.analysis.metrics.lines import SourceLines
from autoprof.analysis.metrics.lines.match import attribute
from autoprof.analysis.metrics.lines.table import module_label, op_lines
from autoprof.analysis.metrics.lines.trace import (
    LinesOp,
    library_frame,
    read_lines_trace,
)
from autoprof.analysis.report.lines import line_rows, render_lines

LAYERS = 10
USER_LINE = "/home/me/model.py:40 (forward)"


def _layered_ops(uneven: bool) -> tuple[pd.DataFrame, list[LinesOp]]:
    """One step: aten::addmm once per layer, all called from the same user line, each in its
    own layer's module (layer 3 three times heavier when ``uneven``)."""
    events = [kineto_event("ProfilerStep#1", "user_annotation", 0, 40 * LAYERS + 10)]
    for i in range(LAYERS):
        dur = 30.0 if uneven and i == 3 else 10.0
        events.append(kineto_event("aten::addmm", "cpu_op", 1 + 40 * i, dur))
    table = events_table(events)
    lines = [LinesOp(1, "aten::addmm", float(i), USER_LINE,
                     f"Model.layers.{i}.self_attn.q_proj") for i in range(LAYERS)]
    return table, lines


def test_an_op_over_every_layer_is_named_by_their_shape_not_one_layer() -> None:
    events, lines = _layered_ops(uneven=True)
    got = op_lines(events, attribute(events, {0: lines})).set_index("name")
    module = str(got.loc["aten::addmm", "module"])
    every = {f"Model.layers.{i}.self_attn.q_proj" for i in range(LAYERS)}
    assert module not in every  # not one layer's path
    assert module.startswith("Model.layers.*.self_attn.q_proj")
    assert f"in {LAYERS} modules" in module
    assert "most in Model.layers.3.self_attn.q_proj" in module  # the heaviest, by self time


def test_module_label_rule() -> None:
    one = pd.Series(["M.a", "M.a"])
    assert module_label(one, pd.Series([1.0, 2.0])) == "M.a"
    assert module_label(pd.Series(["", ""]), pd.Series([1.0, 1.0])) == ""
    # different modules of one block: their common path, the count, the heaviest
    label = module_label(pd.Series(["M.h.0.attn", "M.h.0.mlp", ""]), pd.Series([1.0, 3.0, 9.0]))
    assert label.startswith("M.h.0 (") and "in 2 modules" in label and "most in M.h.0.mlp" in label
    # no shared path: the count and the heaviest
    label = module_label(pd.Series(["A.x", "B.y"]), pd.Series([5.0, 1.0]))
    assert label.startswith("in 2 modules") and "most in A.x" in label


def test_library_frames_are_installed_packages_other_than_torch() -> None:
    pkgs = "/venv/lib/python3.12/site-packages"
    assert library_frame(f"{pkgs}/transformers/generation/utils.py(2012): generate") == \
        "transformers/generation/utils.py:2012 (generate)"
    for not_library in (f"{pkgs}/torch/nn/modules/linear.py(120): forward",
                        "/home/me/train.py(3): main", "/usr/lib/python3.12/enum.py(9): f",
                        "<built-in method mm>", "nn.Module: Linear_0"):
        assert library_frame(not_library) == "", not_library


def _x(cat: str, name: str, ts: float, dur: float) -> dict[str, object]:
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "tid": 1, "pid": 100}


PKGS = "/venv/lib/python3.12/site-packages"
FORWARD = f"{PKGS}/transformers/models/llama/modeling_llama.py(300): forward"
SAMPLE = f"{PKGS}/transformers/generation/utils.py(2400): _sample"


def _generate_lines_trace(path: Path) -> Path:
    """One user line, ``model.generate()``: inside it the model's forward (two matmuls) and
    the sampling (a softmax); and a second user line that calls torch itself."""
    line = "autoprof::line /home/me/gen.py:9 (main)"
    events = [
        _x("python_function", "/home/me/gen.py(5): main", 0, 200),
        _x("python_function", f"{PKGS}/transformers/generation/utils.py(2012): generate", 1, 150),
        _x("python_function", FORWARD, 2, 100),
        _x("python_function", f"{PKGS}/torch/nn/modules/linear.py(120): forward", 3, 90),
        _x("user_annotation", line, 4, 40), _x("cpu_op", "aten::mm", 5, 30),
        _x("user_annotation", line, 50, 40), _x("cpu_op", "aten::mm", 51, 30),
        _x("python_function", SAMPLE, 110, 30),
        _x("user_annotation", line, 111, 20), _x("cpu_op", "aten::softmax", 112, 10),
        _x("user_annotation", "autoprof::line /home/me/gen.py:10 (main)", 160, 20),
        _x("cpu_op", "aten::argmax", 161, 10),
    ]
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": events}, f)
    return path


def test_lines_trace_gives_each_op_the_library_frame_nearest_it(tmp_path: Path) -> None:
    ops = read_lines_trace(_generate_lines_trace(tmp_path / "lines.w.json.gz"))
    got = [(o.name, o.source, o.library) for o in ops]
    assert got == [
        ("aten::mm", "/home/me/gen.py:9 (main)",
         "transformers/models/llama/modeling_llama.py:300 (forward)"),
        ("aten::mm", "/home/me/gen.py:9 (main)",
         "transformers/models/llama/modeling_llama.py:300 (forward)"),
        ("aten::softmax", "/home/me/gen.py:9 (main)",
         "transformers/generation/utils.py:2400 (_sample)"),
        ("aten::argmax", "/home/me/gen.py:10 (main)", ""),  # the user's own call: none
    ]


def test_autoprof_lines_offers_the_library_frames_of_a_library_line(tmp_path: Path) -> None:
    _generate_lines_trace(tmp_path / "lines.w.json.gz")
    names = [("aten::mm", 30.0), ("aten::mm", 30.0), ("aten::softmax", 10.0),
             ("aten::argmax", 10.0)]
    events = [kineto_event("ProfilerStep#1", "user_annotation", 0, 200)]
    events += [kineto_event(n, "cpu_op", 1 + 40 * i, d) for i, (n, d) in enumerate(names)]
    lines = SourceLines(tmp_path, events_table(events))
    rows = {r["source"]: r for r in line_rows(lines)}
    generate = rows["/home/me/gen.py:9 (main)"]
    frames = [f["frame"] for f in generate["library"]]
    assert frames == ["transformers/models/llama/modeling_llama.py:300 (forward)",
                      "transformers/generation/utils.py:2400 (_sample)"]  # heaviest first
    # the frames split the line's own time, no more
    split = sum(f["self_cpu_us"] for f in generate["library"])
    assert 0 < split <= generate["self_cpu_us"] + 1e-9
    assert generate["library"][0]["self_cpu_us"] > generate["library"][1]["self_cpu_us"]
    assert rows["/home/me/gen.py:10 (main)"]["library"] == []
    text = render_lines(lines, "run")
    assert "in the library: transformers/models/llama/modeling_llama.py:300 (forward)" in text
