"""AppTest helpers shared by the viewer's page tests."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from streamlit.testing.v1 import AppTest

from support.viewer import APP

MARKDOWN_KINDS = ("markdown", "caption", "title", "header", "subheader", "info", "warning",
                  "error", "success")
NOT_WIRED = "not available from autoprof.analysis"


def open_app(root: Path, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    monkeypatch.setenv("AUTOPROF_DIR", str(root))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def visit(at: AppTest, page: str) -> AppTest:
    at.switch_page(f"../autoprof/viewer/pages/{page}.py").run()
    assert not at.exception, (page, [e.value for e in at.exception])
    return at


def markdown_sources(at: AppTest) -> Iterator[str]:
    """Every string Streamlit will interpret as Markdown, main area and sidebar, as sent."""
    for kind in MARKDOWN_KINDS:
        for el in getattr(at, kind):
            yield str(el.value)


def markdown_texts(at: AppTest) -> Iterator[str]:
    """The same strings as a reader sees them (backslash escapes resolved)."""
    for source in markdown_sources(at):
        yield re.sub(r"\\(.)", r"\1", source)


UNESCAPED_MARKUP = re.compile(r"(?<!\\)[<>*_`$\[]|(?<!\\):\w")


def charts(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]


def chart_data(at: AppTest) -> list:
    """The data frames Streamlit ships with the charts (Arrow IPC beside the spec)."""
    return [pa.ipc.open_stream(ds.data.data).read_all().to_pandas()
            for c in at.get("vega_lite_chart") for ds in c.proto.datasets]


def run_labels(at: AppTest) -> list[str]:
    """The run picker's labels ('✗ name/run_id · failed · ...'), as the user sees them."""
    return list(at.selectbox(key="run").options)


def label_path(at: AppTest, label: str) -> str:
    """The run path behind a picker label: traces folder / the label's first part."""
    rel = label.split(" · ")[0]
    if rel[:2] in ("✗ ", "… ", "◐ ", "? "):
        rel = rel[2:]
    return str(Path(os.environ["AUTOPROF_DIR"]).resolve() / rel)  # the folder open_app set


def select_run(at: AppTest, contains: str) -> AppTest:
    """Pick the first run whose label contains `contains` (by its path, as a click would)."""
    match = [lbl for lbl in run_labels(at) if contains in lbl]
    assert match, (contains, run_labels(at))
    box = at.selectbox(key="run")
    path = label_path(at, match[0])
    assert box.format_func(path) == match[0], (path, match[0])
    box.select(path).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="run").value == path
    return at


def assert_wired(at: AppTest, page: str) -> None:
    missing = [t for t in markdown_texts(at) if NOT_WIRED in t]
    assert not missing, (page, missing)
