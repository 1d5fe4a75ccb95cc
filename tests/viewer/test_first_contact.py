"""AppTest: the viewer opens on the answer, on the shipped example runs and on a lone CPU run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.apptest import (
    chart_data,
    charts,
    markdown_texts,
    open_app,
    run_labels,
    select_run,
    visit,
)
from support.viewer import REPO

EXAMPLES = REPO / "traces" / "examples"
# the seed runs, as traces/examples/README.md lists them
SEED_64 = ("matmul_add/20261130-081107-7833ba", "matmul_add/20261130-081118-917cea")
SEED_4096 = ("matmul_add/20261130-081128-e3a5da", "matmul_add/20261130-081138-a2c77b")
CPU_RUN = next(p for p in (EXAMPLES / "cpu_mlp_train").iterdir() if p.is_dir())


def _runs_table(at) -> dict[str, dict[str, str]]:
    (table,) = [d.value for d in at.dataframe]
    return {row["run"]: row for row in table.to_dict("records")}


@pytest.fixture
def one_cpu_run(tmp_path: Path) -> Path:
    root = tmp_path / "traces"
    shutil.copytree(CPU_RUN, root / "cpu_mlp_train" / CPU_RUN.name)
    return root


def test_one_run_opens_on_its_overview_with_the_verdict_first(one_cpu_run, monkeypatch):
    at = open_app(one_cpu_run, monkeypatch)
    assert at.title[0].value == "Overview"
    verdict_box = at.info[0].value  # the first element under the title is the verdict
    assert verdict_box.startswith("**cpu\\-only**: no GPU work"), verdict_box
    assert charts(at), "the Overview draws at least one chart"
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["GPU busy"] == "—" and metrics["Self GPU total"] == "—"  # missing: a dash
    assert not any("None" in str(v) or "n/a" in str(v) for v in metrics.values()), metrics


def test_examples_open_on_runs_with_every_verdict(monkeypatch):
    at = open_app(EXAMPLES, monkeypatch)
    assert at.title[0].value == "Runs"
    rows = _runs_table(at)
    on_disk = {f"{p.parent.name}/{p.name}" for p in EXAMPLES.glob("*/*") if p.is_dir()}
    assert set(rows) == on_disk
    assert all(row["verdict"] for row in rows.values()), rows
    assert all(rows[r]["verdict"] == "overhead-bound" for r in SEED_64)
    assert all(rows[r]["verdict"] == "compute-bound" for r in SEED_4096)
    # these runs state no size: the column is blank, not the first op's largest dimension
    assert all(rows[r]["size"] == "" for r in (*SEED_64, *SEED_4096))
    assert rows["graph_replay/20261130-081151-06103f"]["verdict"] == "compute-bound"
    assert rows["eager_100/20261130-081150-49320d"]["verdict"] == "overhead-bound"
    assert rows[f"cpu_mlp_train/{CPU_RUN.name}"]["device"] == "CPU"
    assert not any(str(v) in ("None", "nan") for row in rows.values() for v in row.values())


@pytest.mark.slow
def test_examples_are_labelled_beside_the_users_runs(tmp_path, monkeypatch):
    root = tmp_path / "traces"
    shutil.copytree(EXAMPLES, root / "examples")
    shutil.copytree(CPU_RUN, root / "mine" / CPU_RUN.name)
    at = open_app(root, monkeypatch)
    rows = _runs_table(at)
    assert rows[f"mine/{CPU_RUN.name}"]["example"] == ""
    assert {r["example"] for k, r in rows.items() if k.startswith("examples/")} == {"example"}
    assert any("examples shipped with autoprof" in t for t in markdown_texts(at))


def test_a_stray_json_is_not_a_run(one_cpu_run, monkeypatch):
    (one_cpu_run / "results.json").write_text(json.dumps({"speedup": 1.3, "runs": [1, 2]}))
    (one_cpu_run / "notes").mkdir()
    (one_cpu_run / "notes" / "config.json").write_text("{}")
    at = open_app(one_cpu_run, monkeypatch)
    assert run_labels(at) == [f"cpu_mlp_train/{CPU_RUN.name} · complete"]
    assert at.title[0].value == "Overview"  # still one run: it opens on the answer
    visit(at, "compare")
    assert not at.error


def test_compare_log_axis_with_the_selected_run_and_telling_labels(monkeypatch):
    at = select_run(open_app(EXAMPLES, monkeypatch), SEED_4096[0])
    visit(at, "compare")
    box = at.multiselect(key="compare")
    # preselected: the selected run and the other runs of its function, nothing unrelated
    assert sorted(Path(p).parent.name for p in box.value) == ["matmul_add"] * 4, box.value
    others = [p for p in box.options if Path(p).parent.name in ("cpu_mlp_train", "ddp_step")]
    box.set_value([*box.value, *others]).run()
    (spec,) = [s for s in charts(at) if s["title"] == "Median time per profiled step"]
    assert spec["encoding"]["y"]["axis"]["labelLimit"] == 0  # labels drawn whole
    assert spec["encoding"]["x"]["scale"]["type"] == "log"
    labels = list(at.dataframe[-1].value["run"])
    assert labels[0] == "matmul_add · n=4096 · warmup=3 (selected)", labels
    seeds = sorted(lbl.removesuffix(" (selected)") for lbl in labels
                   if lbl.startswith("matmul_add"))
    assert seeds == ["matmul_add · n=4096 · warmup=0", "matmul_add · n=4096 · warmup=3",
                     "matmul_add · n=64 · warmup=0", "matmul_add · n=64 · warmup=3"]
    assert len(set(labels)) == len(labels)
    table = at.dataframe[-1].value.set_index("run")
    assert table.loc["cpu_mlp_train", "gpu_busy_pct"] == "—"  # no GPU: a dash, not None
    assert table.loc["ddp_step", "step_cpu_span_us_median"].endswith(" ms")  # 34 ms, not µs


def test_self_vs_total_sorts_by_self_time(monkeypatch):
    at = select_run(open_app(EXAMPLES, monkeypatch), "cpu_mlp_train")
    visit(at, "ops")
    assert at.selectbox(key="ops_sort").value == "self_cpu_us"
    self_us = list(at.dataframe[0].value["self_cpu_us"])
    assert self_us == sorted(self_us, reverse=True)


def test_timeline_names_regions_and_keeps_deep_nesting(monkeypatch):
    at = select_run(open_app(EXAMPLES, monkeypatch), "cpu_mlp_train")
    visit(at, "timeline")
    (spec,) = charts(at)
    assert "text" in [layer["mark"]["type"] for layer in spec["layer"]]
    labels = {v for df in chart_data(at) if "label" in df.columns for v in df["label"]}
    assert any(v.startswith("ProfilerStep#") for v in labels), labels
    assert any("Optimizer.step" in v for v in labels), labels
    lanes = {v for df in chart_data(at) if "lane" in df.columns for v in df["lane"]}
    assert any(lane.endswith(" L5") for lane in lanes), sorted(lanes)  # deeper than 4 levels


def test_times_are_shown_in_a_readable_unit(monkeypatch):
    at = select_run(open_app(EXAMPLES, monkeypatch), "ddp_step")  # 34 ms steps
    visit(at, "steps")
    titles = [s["encoding"]["y"]["title"] for s in charts(at) if "per profiled step" in
              str(s.get("title"))]
    assert titles == ["CPU span (ms)"], titles


def test_a_run_whose_analysis_fails_leaves_the_other_verdicts(tmp_path, monkeypatch):
    import autoprof.viewer._loading as loading

    root = tmp_path / "traces"
    shutil.copytree(EXAMPLES / "graph_replay", root / "graph_replay")
    shutil.copytree(CPU_RUN, root / "cpu_mlp_train" / CPU_RUN.name)
    real = loading.summary

    def failing(run):
        if run.name == "graph_replay":
            raise ZeroDivisionError("boom in the analysis")
        return real(run)

    monkeypatch.setattr(loading, "summary", failing)
    rows = _runs_table(open_app(root, monkeypatch))
    assert rows[f"cpu_mlp_train/{CPU_RUN.name}"]["verdict"] == "cpu-only"
    (broken,) = [r for k, r in rows.items() if k.startswith("graph_replay/")]
    assert broken["verdict"] == ""
    assert broken["why"] == "analysis failed: ZeroDivisionError: boom in the analysis"


def test_the_runs_page_keeps_verdicts_without_reloading_runs(tmp_path, monkeypatch):
    import autoprof.viewer._loading as loading

    root = tmp_path / "traces"
    shutil.copytree(EXAMPLES / "matmul_add", root / "matmul_add")  # four runs
    loads: list[Path] = []
    real_load = loading._load

    def counting(path, progress):
        loads.append(path)
        return real_load(path, progress)

    monkeypatch.setattr(loading, "_load", counting)
    monkeypatch.setattr(loading.run_store(), "max_entries", 1)  # keeps one loaded run
    at = open_app(root, monkeypatch)
    assert len(loads) == 4 and all(r["verdict"] for r in _runs_table(at).values())
    at.run()  # every widget change reruns the page
    # only the run selected in the sidebar may be loaded again (the pages need it whole)
    assert len(loads) <= 5, "a rerun must not reload runs the Runs page already summarised"
    assert all(r["verdict"] for r in _runs_table(at).values())
