"""`autoprof summary --format markdown` and a run rendering itself in a notebook."""

from __future__ import annotations

import copy
import json
import re
from functools import cache
from pathlib import Path

import msgspec
import pytest

from autoprof.analysis import Report, load
from autoprof.analysis.report.markdown import md, render_markdown
from autoprof.analysis.report.model import Breakdown
from autoprof.analysis.report.notebook import breakdown_bar, render_html

REPO = Path(__file__).resolve().parents[2]
WHATIF_RUN = REPO / "traces" / "examples" / "seed64x100" / "20261201-095009-0a8e73"
CPU_RUN = REPO / "traces" / "examples" / "cpu_mlp_train" / "20261201-090953-58c9f9"


@pytest.fixture(autouse=True)
def _no_cache_files(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOPROF_CACHE", "0")


@cache
def _summary(path: Path) -> dict:
    return load(path).summary()


def summary(path: Path) -> dict:
    """The run's summary JSON, a copy a test may change before reading it into a Report."""
    return copy.deepcopy(_summary(path))


def report(path: Path) -> Report:
    return Report.from_dict(summary(path))


def test_markdown_names_verdict_breakdown_opportunities_and_best_fix() -> None:
    text = render_markdown(report(WHATIF_RUN))
    assert text.startswith("### autoprof: `seed64x100` is **overhead-bound**")
    assert "| `host_launch` | 3.46 ms | 71.3 % |" in text  # units through autoprof.units
    # the estimate with its interval, never the bucket's bound of 3.49x below a 5.6x estimate
    assert "**Opportunities**" in text and \
        "| `host_launch` | 3.46 ms | 71.3 % | cuda-graph 5." in text and "| 3.49x |" not in text
    # the fastest fix measured faster with matching outputs, not the first one listed
    assert ("**Best measured fix** (what-if): compile-reduce-overhead: 9.05x faster "
            "(2.39 ms → 264 µs per call), outputs match") in text
    assert "`short-kernels` (warning)" in text
    assert len(text.splitlines()) < 60  # compact: top ops cut to five per table


def test_markdown_tables_keep_their_columns_whatever_the_names() -> None:
    s = summary(WHATIF_RUN)
    s["top_ops"]["by_self_cpu"][0]["name"] = "evil|<script>alert(1)</script>`x"
    s["diagnostics"][0]["message"] = "a | b <img src=x onerror=alert(1)> *bold*"
    text = render_markdown(Report.from_dict(s))
    assert "<script>" not in text.replace("`evil\\|<script>", "")  # only inside a code span
    assert "<img" not in text
    row = next(line for line in text.splitlines() if "evil" in line)
    # five cells: every pipe of the name is escaped
    assert len(re.split(r"(?<!\\)\|", row.strip().strip("|"))) == 5
    assert md("*x* [a](b) <b>") == "\\*x\\* \\[a\\](b) &lt;b>"


def test_markdown_of_a_cpu_run_without_gpu_or_whatif() -> None:
    text = render_markdown(report(CPU_RUN))
    assert "is **cpu-only**" in text
    assert "Best measured fix" not in text and "Top GPU work" not in text


def test_cli_format_markdown(capsys: pytest.CaptureFixture[str]) -> None:
    from autoprof.cli import main

    assert main(["summary", "--format", "markdown", str(CPU_RUN)]) == 0
    out = capsys.readouterr().out
    assert out == render_markdown(report(CPU_RUN))
    assert main(["summary", "--format", "markdown", str(CPU_RUN.parent)]) == 0
    listing = capsys.readouterr().out
    assert listing.startswith("### autoprof: 1 runs under")
    assert "| cpu-only |" in listing


def test_html_has_the_bar_the_fix_and_escapes_names() -> None:
    s = summary(WHATIF_RUN)
    s["opportunities"][0]["where"][0]["name"] = "<script>alert(1)</script>"
    html = render_html(Report.from_dict(s))
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert 'class="autoprof-bar"' in html
    assert html.count("width:") >= 4  # one segment per bucket with time
    assert "compile-reduce-overhead: 9.05x faster" in html
    assert "overhead-bound" in html
    assert breakdown_bar(msgspec.structs.replace(report(WHATIF_RUN),
                                                breakdown=Breakdown(steps=0))) == ""


def test_run_renders_itself() -> None:
    run = load(CPU_RUN)
    assert "cpu-only" in run._repr_html_()
    assert run._repr_markdown_() == render_markdown(run.report())


@pytest.mark.slow
def test_a_notebook_executed_headlessly_shows_the_rendered_run(tmp_path: Path) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    cells = [
        f"import autoprof\nrun = autoprof.load({str(WHATIF_RUN)!r})\nrun",
        "import torch\n"
        "x = torch.randn(64, 64)\n"
        "autoprof.check(lambda a: torch.relu(a @ a), x, )",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    nbformat.write(nb, tmp_path / "run.ipynb")
    shown = [o for c in nb.cells for o in c.outputs if o.get("output_type") == "execute_result"]
    assert len(shown) == 2, json.dumps([c.outputs for c in nb.cells])[:3000]
    loaded, checked = (o["data"] for o in shown)
    assert 'class="autoprof-bar"' in loaded["text/html"]
    assert "overhead-bound" in loaded["text/html"] and "9.05x faster" in loaded["text/html"]
    assert loaded["text/markdown"].startswith("### autoprof: `seed64x100`")
    assert "cpu-only" in checked["text/html"]  # autoprof.check's result renders itself
