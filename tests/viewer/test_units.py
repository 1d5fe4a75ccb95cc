"""The viewer's own small pieces: path confinement, escaping, units, chart builders."""

from __future__ import annotations

import os

import pandas as pd
import pytest

from autoprof.units import fmt_pct, fmt_us, fmt_value
from autoprof.viewer import _charts
from autoprof.viewer._paths import OutsideFolderError, check_tree, inside
from autoprof.viewer._runlist import run_label
from autoprof.viewer._text import md_escape


def test_inside_accepts_children_and_refuses_escapes(tmp_path):
    root = tmp_path / "traces"
    (root / "run").mkdir(parents=True)
    (root / "run" / "t.json").write_text("{}")
    secret = tmp_path / "secret.json"
    secret.write_text("{}")
    assert inside(root, "run/t.json") == (root / "run" / "t.json").resolve()
    assert inside(root, root / "run") == (root / "run").resolve()
    with pytest.raises(OutsideFolderError):
        inside(root, "../secret.json")
    with pytest.raises(OutsideFolderError):
        inside(root, secret)
    os.symlink(secret, root / "run" / "link.json")
    with pytest.raises(OutsideFolderError):
        inside(root, "run/link.json")
    with pytest.raises(OutsideFolderError):
        check_tree(root, root / "run")  # a run folder holding a link out is refused whole
    os.symlink(tmp_path, root / "up")
    with pytest.raises(OutsideFolderError):
        inside(root, "up/secret.json")
    with pytest.raises(FileNotFoundError):
        inside(root, "missing.json")


def test_md_escape_defuses_markdown_and_html():
    for raw in ("<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "**b** _i_",
                ":red[x] :material/home: $x^2$", "[link](http://x)", "`code`", "a\nb"):
        out = md_escape(raw)
        assert "\n" not in out
        # every punctuation character is escaped, so none can start Markdown or HTML
        chars = iter(out)
        for c in chars:
            if c == "\\":
                assert next(chars) in "<>*_:[]()$`!/.^=\\&#-+{}|~'\"?,;@%", out
            else:
                assert c.isalnum() or c == " ", (raw, out)


@pytest.mark.parametrize("us,text", [(0, "0 µs"), (0.5, "500 ns"), (8.3, "8.3 µs"),
                                     (1234.0, "1.23 ms"), (2.5e6, "2.5 s"),
                                     (float("nan"), "n/a"), (None, "n/a")])
def test_fmt_us(us, text):
    assert fmt_us(us) == text


def test_fmt_value_uses_unit_in_key():
    assert fmt_value("gpu_busy_pct", 79.04) == "79.0 %"
    assert fmt_value("window_us", 1500.0) == "1.5 ms"
    assert fmt_value("warmup_ms", 2.0) == "2 ms"
    assert fmt_value("kernels", 12000) == "12,000"
    assert fmt_value("kind", "compute-bound") == "compute-bound"
    assert fmt_value("step_cpu_span_us_median", 232.3) == "232 µs"
    assert fmt_value("first_warmup_call_ms", 33.3) == "33.3 ms"
    assert fmt_value("gpu_busy_pct", None) == "n/a"
    assert fmt_pct(None) == "n/a"


def test_run_label_marks_failed_and_ranks(tmp_path):
    runs = pd.DataFrame({"path": [str(tmp_path / "a/1"), str(tmp_path / "b/2")],
                         "status": ["failed", "complete"], "verdict": [None, "compute-bound"],
                         "world_size": [1, 4], "error": ["boom", None]})
    assert run_label(runs, str(tmp_path / "a/1"), tmp_path) == "✗ a/1 · failed"
    label = run_label(runs, str(tmp_path / "b/2"), tmp_path)
    assert label == "b/2 · complete · compute-bound · 4 ranks"  # verdict from the listing


def test_self_vs_total_chart_orders_by_self_time():
    # b is a wrapper (largest total, little self time): sorted by total it would hide the ops
    ops = pd.DataFrame({"name": ["a", "b", "<img src=x>"], "calls": [1, 2, 3],
                        "self_cpu_us": [5.0, 1.0, 2.0], "cpu_total_us": [6.0, 9.0, 2.0]})
    spec = _charts.self_vs_total(ops, "self_cpu_us", "cpu_total_us", "CPU", top_n=2).to_dict()
    assert spec["encoding"]["y"]["sort"] == ["a", "<img src=x>"]
    (rows,) = spec["datasets"].values()
    assert {r["measure"] for r in rows} == {"Self", "Total"} and len(rows) == 4


def test_timeline_chart_layers_and_lane_labels():
    spans = pd.DataFrame({"row": [0, 1], "start_us": [0.0, 5.0], "end_us": [4.0, 7.0],
                          "dur_us": [4.0, 2.0], "name": ["op", "k"], "cat": ["cpu_op", "kernel"],
                          "lane": ["CPU thread 1 L0", "GPU 0 stream 7"]})
    links = pd.DataFrame({"x_us": [1.0], "x2_us": [5.0], "row": [0], "row2": [1],
                          "name": ["k"]})
    gaps = pd.DataFrame({"start_us": [4.0], "end_us": [5.0], "row": [1]})
    spec = _charts.timeline(spans, ["CPU thread 1 L0", "GPU 0 stream 7'<x>"], links,
                            gaps).to_dict()
    assert [layer["mark"]["type"] for layer in spec["layer"]] == ["rect", "rect", "rule"]
    label_expr = spec["layer"][0]["encoding"]["y"]["axis"]["labelExpr"]
    assert "'GPU 0 stream 7x'" in label_expr and "<" not in label_expr
