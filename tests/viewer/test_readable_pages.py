"""What a new user reads first: the demo's pointers, the README's page list, and pages whose
numbers come in units that fit (ms steps, MiB, TFLOP), lanes in natural order, whole-step
timelines, compare groups that never mix devices."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from support.apptest import chart_data, charts, open_app, select_run, visit
from support.viewer import REPO

from autoprof.viewer.views import PAGES
from autoprof.viewer.views.compare import labels, sweeps
from autoprof.viewer.views.timeline import lane_order

EXAMPLES = REPO / "traces" / "examples"
CPU_RUN = next(p for p in (EXAMPLES / "cpu_mlp_train").iterdir() if p.is_dir())
H200_4096 = EXAMPLES / "matmul_add" / "20261130-081128-e3a5da"
MEMORY_RUN = next((REPO / "tests" / "data" / "gpu_h200" / "mem_compact").iterdir())
RAW_NUMBER = re.compile(r"^-?\d{4,}\.\d+$|^-?\d{5,}(\.\d+)?$")  # 34032.8467, 123456789


def _closing_lines() -> list[str]:
    text = (REPO / "scripts" / "demo.sh").read_text()
    tail = text.split('AUTOPROF_DEMO_NO_VIEWER:-0}" = "1" ]', 1)[1]
    return [shlex.split(line)[1] for line in tail.splitlines() if line.startswith("echo ")]


def test_the_demos_closing_lines_point_at_what_exists():
    lines = _closing_lines()
    said = " ".join(lines)
    paths = re.findall(r"\b(?:tests|traces)/[\w./-]+", said)
    assert paths, said
    for path in paths:
        assert (REPO / path.rstrip(".:,")).exists(), path
    assert "Traces folder' field" not in said  # a caption, not a field one can type into


def test_the_readme_lists_every_page():
    readme = (REPO / "README.md").read_text()
    listed = readme.split("Pages: ", 1)[1].split("\n\n", 1)[0]
    for _, title, _ in PAGES:
        assert f"**{title.split(' and ')[0].split(' vs ')[0]}" in listed, title


@pytest.fixture
def one_cpu_run(tmp_path: Path) -> Path:
    root = tmp_path / "traces"
    shutil.copytree(CPU_RUN, root / "cpu_mlp_train" / CPU_RUN.name)
    return root


def _breakdown(at) -> tuple[dict, pd.DataFrame]:
    (spec,) = [s for s in charts(at) if s.get("title") == "Where the time goes, per step"]
    (data,) = [df for df in chart_data(at) if "bucket" in df.columns]
    return spec, data


def test_overview_legend_names_every_bucket_a_cpu_run_has(one_cpu_run, monkeypatch):
    spec, data = _breakdown(open_app(one_cpu_run, monkeypatch))
    color = spec["encoding"]["color"]
    with_time = sorted(set(data.loc[data["time_us"] > 0, "bucket"]))
    assert sorted(color["scale"]["domain"]) == with_time and len(with_time) >= 2
    assert color["legend"]["orient"] == "bottom"  # not cut to the height of a short chart
    assert color["legend"]["symbolLimit"] >= len(with_time)
    assert spec["height"] == {"step": 24}  # a band per step: the legend cannot squeeze them


def test_overview_axis_of_a_34_ms_step_reads_ms(monkeypatch):
    at = select_run(open_app(EXAMPLES, monkeypatch), "ddp_step")
    visit(at, "overview")
    spec, data = _breakdown(at)
    assert spec["encoding"]["x"]["title"] == "time in the step (ms)"
    assert 10 < float(data.groupby("label")["time_us"].sum().max()) < 100  # ms, not µs


def test_timeline_lanes_sort_naturally():
    lanes = ["GPU 0 stream 7", "CPU thread 9 L10", "CPU thread 9 L2", "CPU thread 10 L0",
             "CPU thread 9 L1", "GPU 0 stream 13"]
    assert lane_order(lanes) == ["CPU thread 9 L1", "CPU thread 9 L2", "CPU thread 9 L10",
                                 "CPU thread 10 L0", "GPU 0 stream 7", "GPU 0 stream 13"]


def test_timeline_page_draws_lanes_in_natural_order(one_cpu_run, monkeypatch):
    at = visit(open_app(one_cpu_run, monkeypatch), "timeline")
    (spans,) = [df for df in chart_data(at) if "lane" in df.columns]
    drawn = spans.sort_values("row").drop_duplicates("row")["lane"].tolist()
    assert drawn == lane_order(drawn), drawn


def test_steps_table_shows_start_after_the_first_step_in_ms(one_cpu_run, monkeypatch):
    at = visit(open_app(one_cpu_run, monkeypatch), "steps")
    table = at.dataframe[0].value
    assert "start_us" not in table.columns and "end_us" not in table.columns
    starts = [float(v.replace(",", "")) for v in table["start (ms after the first step)"]]
    assert starts[0] == 0.0 and starts == sorted(starts) and starts[-1] < 1000, starts
    assert len(set(starts)) == len(starts)


def _cells(at) -> list[str]:
    return [str(v) for d in at.dataframe for v in d.value.to_numpy().ravel()]


def test_roofline_tables_read_in_units(tmp_path, monkeypatch):
    root = tmp_path / "traces"
    shutil.copytree(H200_4096, root / "matmul_add" / H200_4096.name)
    at = visit(open_app(root, monkeypatch), "roofline")
    kernels = at.dataframe[0].value
    assert all(str(v).endswith(("FLOP", "—")) for v in kernels["flops"]), kernels["flops"]
    assert all(str(v).endswith(("B", "—")) for v in kernels["bytes"]), kernels["bytes"]
    assert all(str(v).endswith(("s", "—")) for v in kernels["gpu_us"])  # µs / ms / s
    assert not [c for c in _cells(at) if RAW_NUMBER.match(c)], _cells(at)


def test_memory_tables_read_in_units(tmp_path, monkeypatch):
    root = tmp_path / "traces"
    shutil.copytree(MEMORY_RUN, root / "mem_compact" / MEMORY_RUN.name)
    at = visit(open_app(root, monkeypatch), "memory")
    cells = _cells(at)
    assert any(c.endswith(("KiB", "MiB", "GiB")) for c in cells), cells
    assert not [c for c in cells if RAW_NUMBER.match(c)], cells


def test_ranks_table_reads_in_units(monkeypatch):
    at = select_run(open_app(EXAMPLES, monkeypatch), "ddp_step")
    visit(at, "ranks")
    table = at.dataframe[-1].value
    assert all(str(v).endswith(" ms") for v in table["step_time_us_median"]), table
    assert not [c for c in _cells(at) if RAW_NUMBER.match(c)], _cells(at)


def _run(name: str, device: str | None) -> SimpleNamespace:
    manifest = {"device": {"name": device}} if device else {}
    return SimpleNamespace(name=name, manifest=manifest, trace_metadata=[], is_cuda=False,
                           path=f"/t/{name}/{device}")


def test_a_size_sweep_never_mixes_devices_and_labels_name_the_device():
    runs = [_run("matmul_add", "NVIDIA H200"), _run("matmul_add", "NVIDIA H200"),
            _run("matmul_add", None), _run("matmul_add", None), _run("other", None)]
    table = pd.DataFrame({"size": [64.0, 4096.0, 64.0, 128.0, 8.0],
                          "input_dims": [""] * 5, "name": [r.name for r in runs]})
    groups = {key: list(rows.index) for key, rows in sweeps(table, runs)}
    assert groups == {("matmul_add", "NVIDIA H200"): [0, 1], ("matmul_add", "CPU"): [2, 3]}
    shown = labels(table, runs)
    assert shown[:4] == ["matmul_add · NVIDIA H200 · n=64", "matmul_add · NVIDIA H200 · n=4096",
                         "matmul_add · CPU · n=64", "matmul_add · CPU · n=128"], shown
    assert shown[4] == "other"
