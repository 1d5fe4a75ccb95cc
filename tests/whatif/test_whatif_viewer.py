"""The What-if page and the Overview's best-fix line, driven through Streamlit's AppTest."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pytest
import torch
from streamlit.testing.v1 import AppTest

import autoprof
from autoprof.runfolder.whatif import whatif_record, write_whatif

APP = str(Path(__file__).resolve().parents[2] / "viewer" / "app.py")
MEASURED = {"applicable": True, "baseline_us": 300.0, "samples": 15}
RESULTS = [
    {"fix": "compile", **MEASURED, "status": "faster", "fixed_us": 100.0, "speedup": 3.0,
     "measured_speedup": 3.0, "speedup_low": 2.5, "speedup_high": 3.5, "outputs_match": True,
     "max_abs_error": 0.0, "setup_s": 4.2, "break_even_calls": 21000,
     "suggested_by": ["cpu-only"], "fixed_run": "whatif/tried.compile/20261201-000000-abcdef",
     "fixed_verdict": "cpu-only"},
    {"fix": "bf16", **MEASURED, "status": "outputs differ", "fixed_us": 60.0, "speedup": None,
     "measured_speedup": 5.0, "outputs_match": False, "max_abs_error": 1.0,
     "reason": "the fix changes the outputs: output: values differ beyond tolerance"},
    {"fix": "cuda-graph", "applicable": False, "status": "not applicable",
     "reason": "no CUDA device", "suggested_by": ["cpu-only"]},
]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A traces folder with one CPU run: with a what-if record, and one without."""
    traces = tmp_path / "traces"
    for name in ("tried", "untried"):
        run = autoprof.check(autoprof.autoprof(name=name, out_dir=str(traces))(lambda x: x + 1),
                             torch.ones(4))
        if name == "tried":
            write_whatif(Path(run.path), whatif_record(RESULTS))
    return traces


def _open(root: Path, monkeypatch: pytest.MonkeyPatch, run_name: str) -> AppTest:
    monkeypatch.setenv("AUTOPROF_DIR", str(root))
    at = AppTest.from_file(APP, default_timeout=60).run()
    box = at.selectbox(key="run")  # options are the labels: "<name>/<run_id> · <status>"
    (label,) = [o for o in box.options if str(o).startswith(f"{run_name}/")]
    box.select(str(root.resolve() / str(label).split(" · ")[0])).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _visit(at: AppTest, page: str) -> AppTest:
    at.switch_page(f"../autoprof/viewer/pages/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _texts(at: AppTest) -> list[str]:
    """Every text element as a reader sees it (Markdown escapes resolved)."""
    return [re.sub(r"\\(.)", r"\1", str(el.value))
            for kind in ("markdown", "info", "success", "caption", "warning")
            for el in getattr(at, kind)]


def test_the_page_charts_the_measured_fixes_and_tables_all_of_them(root, monkeypatch):
    at = _visit(_open(root, monkeypatch, "tried"), "whatif")
    assert at.title[0].value == "What-if"
    assert any("Best measured fix: **compile**, 3.00x" in t for t in _texts(at)), _texts(at)
    (chart,) = at.get("vega_lite_chart")
    frames = [pa.ipc.open_stream(ds.data.data).read_all().to_pandas()
              for ds in chart.proto.datasets]
    bars = next(f for f in frames if "fix" in f.columns)
    assert list(bars["fix"]) == ["compile", "bf16"]  # the not-applicable fix has no bar
    assert list(bars["status"]) == ["faster", "outputs differ"]
    assert bars["speedup"].tolist() == [3.0, 5.0]
    table = at.dataframe[0].value
    assert list(table["fix"]) == ["compile", "bf16", "cuda-graph"]
    assert table.loc[2, "reason"] == "no CUDA device"
    assert bool(table.loc[1, "outputs match"]) is False
    assert table.loc[0, "profiled with the fix"] == "cpu-only"
    assert any("compile was profiled too:" in t and "tried.compile" in t for t in _texts(at))


def test_the_overview_names_the_best_fix_only_when_there_is_one(root, monkeypatch):
    at = _visit(_open(root, monkeypatch, "tried"), "overview")
    assert any("Best measured fix: **compile**" in t for t in _texts(at))
    assert any(c.startswith("cpu-only suggested compile: faster, 3.00x")
               and "; cuda-graph: not applicable (no CUDA device)" in c for c in _texts(at))
    at = _visit(_open(root, monkeypatch, "untried"), "overview")
    assert not any("Best measured fix" in t for t in _texts(at))
    at = _visit(at, "whatif")
    assert any("No fixes were tried for this run" in t for t in _texts(at))


def test_the_page_is_in_the_navigation():
    from autoprof.viewer.views import PAGE_FILES, PAGES

    assert ("whatif.py", "What-if", "what-if") in PAGES
    assert (PAGE_FILES / "whatif.py").is_file()
    assert json.dumps(RESULTS)  # the fixture is what whatif.json holds: plain JSON


DEPENDS = {"fix": "cuda-graph", **MEASURED, "status": "depends on inputs", "fixed_us": 326.0,
           "speedup": 0.92, "measured_speedup": 0.92, "speedup_low": 0.91,
           "speedup_high": 0.93, "outputs_match": True, "same_inputs_us": 62.5,
           "same_inputs_speedup": 4.8, "same_inputs_speedup_low": 4.7,
           "same_inputs_speedup_high": 4.9, "same_inputs_status": "faster",
           "suggested_by": ["cpu-only"]}


def test_a_fix_that_depends_on_the_loop_shows_both_numbers(root, monkeypatch):
    (run,) = [p.parent for p in root.rglob("manifest.json") if "untried" in str(p)]
    write_whatif(run, whatif_record([DEPENDS]))
    at = _visit(_open(root, monkeypatch, "untried"), "whatif")
    texts = _texts(at)
    assert any("No fix tried was measured faster" in t and "Depends on your loop: cuda-graph: "
               "slower, 0.92x" in t and "faster, 4.80x" in t for t in texts), texts
    table = at.dataframe[0].value
    assert table.loc[0, "result"] == "depends on inputs"
    assert table.loc[0, "speedup"] == 0.92
    assert table.loc[0, "same inputs (no copy)"] == "4.80x (95% CI 4.70-4.90x)"
