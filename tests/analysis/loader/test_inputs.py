"""What load() accepts: a trace file, a run folder (with rank manifests), a folder of
per-rank traces, an old-schema run; what it refuses: a folder of runs, escapes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.invariants import check_events
from support.loader_paths import MATMUL, REPO
from support.manifests import write_manifest
from support.runs import write_run, write_trace

from autoprof.analysis import TraceError, find_runs, load

OLD_RUN = REPO / "tests" / "data" / "old_schema_run" / "matmul_add" / "20251001-120000-0a1b2c"


def test_single_trace_json_and_gz_give_the_same_table(tmp_path):
    plain = load(MATMUL / "n64_cold" / "trace.json")
    gz = load(write_trace(tmp_path / "t.pt.trace.json.gz"))
    assert plain.events.equals(gz.events)
    assert plain.manifest is None and plain.world_size == 1 and plain.is_cuda
    assert plain.trace_paths == [MATMUL / "n64_cold" / "trace.json"]


def test_run_folder(tmp_path):
    run_dir = write_run(tmp_path, traces=("gpuhost_4242.1.pt.trace.json.gz",
                                          "gpuhost_4242.2.pt.trace.json.gz"))
    run = load(run_dir)
    assert run.name == "step" and run.manifest is not None
    assert run.manifest["status"] == "complete"
    assert len(run.trace_paths) == 2
    single = load(MATMUL / "n64_cold" / "trace.json").events
    assert len(run.events) == 2 * len(single)  # one trace per schedule cycle
    check_events(run.events)
    assert load(run_dir / "manifest.json").events.equals(run.events)


def test_old_schema_run_loads_with_defaults():
    run = load(OLD_RUN)
    assert run.name == "matmul_add"
    assert run.manifest is not None
    assert run.manifest["files"] is None and run.manifest["world_size"] == 1
    assert run.manifest["options"] == {} and run.manifest["error"] is None
    assert len(run.trace_paths) == 1 and len(run.events) == 32
    check_events(run.events)


def test_distributed_run_merges_rank_manifests(tmp_path):
    run_dir = tmp_path / "step" / "20261130-080000-abcdef"
    write_trace(run_dir / "rank0.11.pt.trace.json.gz")
    write_trace(run_dir / "rank1.12.pt.trace.json.gz")
    for rank in (0, 1):
        write_manifest(run_dir, file=f"rank{rank}.manifest.json", rank=rank, world_size=2,
                       files=[f"rank{rank}.1{rank + 1}.pt.trace.json.gz"])
    write_manifest(run_dir, rank=0, world_size=2, ranks=[0, 1],
                   files=["rank0.11.pt.trace.json.gz"])
    run = load(run_dir)
    assert run.world_size == 2
    assert sorted(run.events["rank"].unique()) == [0, 1]
    check_events(run.events)
    half = run.events[run.events["rank"] == 1]
    kernels = half[half["cat"] == "kernel"]
    assert (run.events["rank"].to_numpy()[kernels["launch_row"].to_numpy()] == 1).all()


def test_ranks_with_other_text_values_merge_into_one_set_of_categories(tmp_path):
    write_trace(tmp_path / "rank0.1.pt.trace.json", "n64_cold")
    write_trace(tmp_path / "rank1.2.pt.trace.json", "n4096_cold")
    run = load(tmp_path)
    check_events(run.events)  # categorical text columns, sorted, every category used
    dims = run.events.groupby("rank")["input_dims"].agg(lambda s: set(s.astype(str)))
    assert "[[64, 64], [64, 64]]" in dims[0] and "[[64, 64], [64, 64]]" not in dims[1]
    assert "[[4096, 4096], [4096, 4096]]" in dims[1]
    each = [load(tmp_path / name).events for name in ("rank0.1.pt.trace.json",
                                                      "rank1.2.pt.trace.json")]
    for rank, alone in enumerate(each):
        merged = run.events[run.events["rank"] == rank]
        assert merged["name"].astype(str).tolist() == alone["name"].astype(str).tolist()


def test_a_lone_trace_in_a_run_folder_takes_its_rank_from_the_manifest(tmp_path):
    run_dir = write_run(tmp_path, traces=("gpuhost_4242.1.pt.trace.json.gz",), rank=5,
                        world_size=8)
    run = load(run_dir / "gpuhost_4242.1.pt.trace.json.gz")
    assert set(run.events["rank"]) == {5}


def test_rank_comes_from_distributed_info_then_file_name(tmp_path):
    folder = tmp_path / "traces"
    write_trace(folder / "worker_a.json", rank=1)  # distributedInfo wins
    write_trace(folder / "rank3.99.pt.trace.json")  # name gives rank 3
    run = load(folder)
    assert sorted(run.events["rank"].unique()) == [1, 3]
    assert run.world_size == 2
    single = load(folder / "rank3.99.pt.trace.json")
    assert set(single.events["rank"]) == {3}


def test_folder_of_runs_is_refused_with_the_newest_named(tmp_path):
    write_run(tmp_path, run_id="20261130-080000-aaaaaa")
    newest = write_run(tmp_path, run_id="20261130-090000-bbbbbb")
    with pytest.raises(TraceError) as err:
        load(tmp_path)
    assert "2 runs" in str(err.value) and str(newest) in str(err.value)
    with pytest.raises(TraceError):
        load(tmp_path / "step")


def test_find_runs_lists_runs_and_loose_traces_newest_first(tmp_path):
    write_run(tmp_path, run_id="20261130-080000-aaaaaa", started_at="2026-11-30T08:00:00")
    write_run(tmp_path, run_id="20261130-090000-bbbbbb", started_at="2026-11-30T09:00:00",
              status="failed", error={"type": "RuntimeError", "message": "boom", "phase": "active"})
    write_trace(tmp_path / "loose" / "x.pt.trace.json")
    runs = find_runs(tmp_path)
    assert list(runs.columns) == ["path", "kind", "name", "run_id", "started_at", "status",
                                  "world_size", "verdict", "error"]
    by_kind = runs.groupby("kind").size().to_dict()
    assert by_kind == {"run": 2, "trace": 1}
    run_rows = runs[runs["kind"] == "run"]
    assert run_rows["run_id"].tolist() == ["20261130-090000-bbbbbb", "20261130-080000-aaaaaa"]
    assert run_rows["error"].iloc[0] == "RuntimeError: boom"


def test_find_runs_reports_a_broken_manifest_instead_of_failing(tmp_path):
    run_dir = write_run(tmp_path)
    (run_dir / "manifest.json").write_text("{not json")
    runs = find_runs(tmp_path)
    assert len(runs) == 1 and "manifest is not valid JSON" in runs["error"].iloc[0]


@pytest.mark.skipif(os.name == "nt", reason="symlinks")
def test_symlink_escapes_are_refused(tmp_path):
    outside = write_trace(tmp_path / "outside" / "secret.json")
    root = tmp_path / "root"
    run_dir = write_run(root, traces=("a.pt.trace.json.gz",))
    (run_dir / "b.pt.trace.json").symlink_to(outside)
    data = json.loads((run_dir / "manifest.json").read_text())
    data["files"].append("b.pt.trace.json")
    (run_dir / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(TraceError, match="outside"):
        load(run_dir)
    (root / "link.json").symlink_to(outside)
    with pytest.raises(TraceError, match="outside"):
        load(root / "link.json", root=root)
    (root / "linkdir").symlink_to(outside.parent, target_is_directory=True)
    listed = find_runs(root)
    assert not any("secret" in p for p in listed["path"])
    assert not any(Path(p).resolve().is_relative_to(outside.parent) for p in listed["path"])


def test_manifest_listing_a_path_outside_the_run_is_refused(tmp_path):
    run_dir = write_run(tmp_path, files=["../../evil.json"])
    with pytest.raises(TraceError, match="outside the run folder"):
        load(run_dir)


def test_missing_path():
    with pytest.raises(TraceError, match="no such file"):
        load("/nonexistent/autoprof/run")
