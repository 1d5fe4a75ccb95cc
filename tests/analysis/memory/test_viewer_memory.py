"""The Memory page as a person uses it (AppTest): the timeline chart with the peak annotated
and the steps and regions marked, the tables; a run without memory events says how to record
them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
from support.apptest import chart_data, charts, markdown_texts, open_app, visit

REPO = Path(__file__).resolve().parents[3]
LEAK = next((REPO / "tests" / "data" / "gpu_h200" / "mem_leak").iterdir())


@pytest.fixture
def leak_root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    shutil.copytree(LEAK, root / "mem_leak" / LEAK.name)
    return root


def test_memory_page_draws_the_cuda_timeline(leak_root, monkeypatch):
    at = visit(open_app(leak_root, monkeypatch), "memory")
    assert at.selectbox(key="memory_device").value == 1  # cuda:0 holds the most
    [spec] = charts(at)
    assert spec["title"] == "Memory on cuda:0"
    data = chart_data(at)
    peaks = [df for df in data if "label" in df.columns]
    assert peaks and peaks[0]["label"].iat[0] == "peak 2.11 GiB"
    marks = [df for df in data if "kind" in df.columns]
    assert {"step", "region"} <= set(pd.concat(marks)["kind"])
    assert any("Live at the peak" in t for t in markdown_texts(at))
    assert len(at.dataframe) == 4
    assert at.metric[0].value == "2.11 GiB"


def test_memory_page_without_memory_events(plain_trace, tmp_path, monkeypatch):
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(plain_trace, root / "plain.pt.trace.json")
    at = visit(open_app(root, monkeypatch), "memory")
    assert any("profile_memory=True" in t for t in markdown_texts(at))
    assert not charts(at)


def test_memory_page_with_an_empty_folder(tmp_path, monkeypatch):
    root = tmp_path / "empty"
    root.mkdir()
    at = visit(open_app(root, monkeypatch), "memory")
    assert not charts(at) and not at.error


def test_memory_page_on_two_ranks(tmp_path, monkeypatch):
    from support.memory_trace import cuda_steps
    from support.viewer import write_run

    traces = {f"rank{r}": {"traceEvents": cuda_steps(2, 2, 1024 * (r + 1)),
                           "distributedInfo": {"rank": r, "world_size": 2}} for r in range(2)}
    write_run(tmp_path / "root", "ranks", "20261201-090000-00000a", traces, world_size=2)
    at = visit(open_app(tmp_path / "root", monkeypatch), "memory")
    box = at.selectbox(key="memory_device")
    assert box.options == ["cuda:0 (rank 0)", "cuda:0 (rank 1)"]
    assert box.value == 1 and at.metric[0].value == "2 KiB"  # rank 1 holds the most
    assert len(charts(at)) == 1


def test_memory_page_without_reserved_totals(tmp_path, monkeypatch):
    from support.memory_trace import cuda_steps, write

    events = cuda_steps(2, 2, 4096)
    for event in events:
        event.get("args", {}).pop("Total Reserved", None)
    root = tmp_path / "root"
    root.mkdir()
    write(root / "noreserved.pt.trace.json", events)
    at = visit(open_app(root, monkeypatch), "memory")
    assert at.metric[1].value == "n/a"
    lines = [df for df in chart_data(at) if "measure" in df.columns]
    assert lines and set(lines[0]["measure"]) == {"allocated"}
