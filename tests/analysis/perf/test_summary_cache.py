"""Run.summary() cached beside the trace: same answer as computing it, invalidated by change."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.synthetic import write_synthetic_trace

import autoprof.analysis.report.summary as summary_module
from autoprof.analysis import load
from autoprof.analysis.report import summary_cache as _summary_cache
from autoprof.analysis.report.summary import summarize


@pytest.fixture(autouse=True)
def _cache_small_traces(monkeypatch: pytest.MonkeyPatch) -> None:
    # the caches skip traces under 4 MiB; these tests use small ones
    monkeypatch.setenv("AUTOPROF_CACHE_MIN_BYTES", "0")
    monkeypatch.delenv("AUTOPROF_CACHE", raising=False)


def _trace(tmp_path: Path, n_events: int = 3000, seed: int = 0) -> Path:
    path = tmp_path / "trace.json"
    write_synthetic_trace(path, n_events, seed=seed)
    return path


def _no_summarize(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(run: object) -> object:
        raise AssertionError("summarize() ran although the summary cache should answer")

    monkeypatch.setattr(summary_module, "summarize", refuse)


def test_second_open_reads_the_cache_and_gives_the_same_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = _trace(tmp_path)
    first = load(trace).summary()
    cache = _summary_cache.summary_path(trace)
    assert cache.is_file()
    assert first == summarize(load(trace)).to_dict()  # the cached value is the computed one
    assert first["events"] > 1000 and first["steps"]  # a real summary, not an empty one
    _no_summarize(monkeypatch)
    second = load(trace).summary()
    assert second == first
    assert json.dumps(second, sort_keys=True) == json.dumps(first, sort_keys=True)


def test_a_changed_trace_invalidates_the_summary(tmp_path: Path) -> None:
    trace = _trace(tmp_path, seed=0)
    old = load(trace).summary()
    stat = trace.stat()
    write_synthetic_trace(trace, 4000, seed=5)  # other content, other size
    os.utime(trace, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    new = load(trace).summary()
    assert new != old
    assert new["events"] != old["events"]
    assert new == summarize(load(trace)).to_dict()


def test_same_size_new_mtime_invalidates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = _trace(tmp_path)
    load(trace).summary()
    cache = _summary_cache.summary_path(trace)
    stored = json.loads(cache.read_text())
    stored["summary"]["verdict"] = "planted"  # would show if the stale entry were used
    stored["summary_sha256"] = _summary_cache._digest(stored["summary"])
    cache.write_text(json.dumps(stored))
    assert load(trace).summary()["verdict"] == "planted"  # key unchanged: the entry is used
    stat = trace.stat()
    os.utime(trace, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert load(trace).summary()["verdict"] != "planted"


@pytest.mark.parametrize("content", ["", "{not json", "[1, 2]", '{"key": 1}'])
def test_a_broken_cache_is_ignored_and_rewritten(tmp_path: Path, content: str) -> None:
    trace = _trace(tmp_path)
    expected = summarize(load(trace)).to_dict()
    cache = _summary_cache.summary_path(trace)
    cache.write_text(content)
    assert load(trace).summary() == expected
    assert json.loads(cache.read_text())["summary"] == expected


def test_modified_events_are_not_answered_from_the_cache(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    run = load(trace)
    full = run.summary()
    run.events = run.events[run.events["lane"] == "cpu"]
    part = run.summary()
    assert part["events"] < full["events"]
    assert part == summarize(run).to_dict()


def test_an_unwritable_folder_still_gives_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = _trace(tmp_path)
    monkeypatch.setattr(_summary_cache, "summary_path",
                        lambda t: tmp_path / "missing-dir" / "x.json")
    assert load(trace).summary() == summarize(load(trace)).to_dict()
    assert not (tmp_path / "missing-dir").exists()


def test_small_traces_and_cache_off_write_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = _trace(tmp_path)
    monkeypatch.setenv("AUTOPROF_CACHE_MIN_BYTES", str(trace.stat().st_size + 1))
    load(trace).summary()
    assert not _summary_cache.summary_path(trace).exists()
    monkeypatch.setenv("AUTOPROF_CACHE_MIN_BYTES", "0")
    monkeypatch.setenv("AUTOPROF_CACHE", "0")
    load(trace).summary()
    assert not _summary_cache.summary_path(trace).exists()


def test_a_changed_manifest_invalidates(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    write_synthetic_trace(run_dir / "host_1.1.pt.trace.json", 3000, seed=0)
    manifest = {"schema_version": 1, "name": "synthetic", "status": "partial",
                "files": ["host_1.1.pt.trace.json"]}
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    first = load(run_dir)
    assert first.manifest is not None
    assert first.summary()["status"] == "partial"
    manifest["status"] = "complete"
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    assert load(run_dir).summary()["status"] == "complete"


def test_caches_beside_a_different_trace_of_the_same_size_and_mtime_are_not_used(
    tmp_path: Path,
) -> None:
    # a trace replaced in place by another one of the same size and mtime (cp -p, rsync -t,
    # an archive unpacked over the folder) keeps its caches, and the events' sums match too
    trace = _trace(tmp_path)
    original = trace.read_bytes()
    stat = trace.stat()
    load(trace).summary()
    swapped = original.replace(b'"aten::relu"', b'"aten::tanh"')
    assert swapped != original and len(swapped) == len(original)
    trace.write_bytes(swapped)
    os.utime(trace, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    names = {op["name"] for ops in load(trace).summary()["top_ops"].values() for op in ops}
    assert "aten::tanh" in names and "aten::relu" not in names


def test_a_tampered_summary_under_a_matching_key_is_ignored(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    expected = load(trace).summary()
    cache = _summary_cache.summary_path(trace)
    stored = json.loads(cache.read_text())
    stored["summary"]["verdict"] = "planted"
    cache.write_text(json.dumps(stored))
    assert load(trace).summary() == expected


def test_the_summary_cache_names_the_code_it_ran_and_a_change_to_it_recomputes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = _trace(tmp_path)
    first = load(trace).summary()
    cache = _summary_cache.summary_path(trace)
    stored = json.loads(cache.read_text())
    assert "analysis/report/summary.py" in stored["code"]["files"]  # the code that computed it
    stored["code"]["hash"] = "0" * 64  # as after an edit to one of those files
    cache.write_text(json.dumps(stored))
    calls: list[object] = []
    real = summary_module.summarize

    def counting(run: object) -> dict[str, object]:
        calls.append(run)
        return real(run)  # type: ignore[arg-type]

    monkeypatch.setattr(summary_module, "summarize", counting)
    assert load(trace).summary() == first
    assert len(calls) == 1  # recomputed, not read from the stale entry
