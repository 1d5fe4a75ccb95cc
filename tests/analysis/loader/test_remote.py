"""Traces read where they lie, by fsspec URL: a committed two-rank DDP run (gzipped traces,
rank manifests) copied into fsspec's ``memory://`` filesystem gives the same summary as the
local folder, through ``autoprof.load``, the many-rank map and the CLI; a plain trace too; a
missing URL, or a URL without fsspec installed, is one clear line naming the URL.
"""

from __future__ import annotations

import gzip
import json
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import autoprof
from autoprof.analysis.loader.errors import TraceError
from autoprof.analysis.loader.remote import RemoteFile
from autoprof.analysis.scale import rank_map, rank_tasks, summarize_ranks
from autoprof.cli import main

fsspec = pytest.importorskip("fsspec")

DATA = Path(__file__).resolve().parents[2] / "data"
RUN = next((DATA / "gpu_h200_x2" / "runs" / "ddp_straggler").glob("*/"))
WHERE_IT_LIES = ("path", "trace_paths")  # the only keys that name the location


@pytest.fixture
def remote_run() -> Iterator[str]:
    """The committed run, copied file by file into memory:// (removed afterwards)."""
    fs = fsspec.filesystem("memory")
    root = f"/autoprof-test-{uuid.uuid4().hex}"
    for item in sorted(RUN.iterdir()):
        fs.pipe(f"{root}/run/{item.name}", item.read_bytes())
    yield f"memory://{root}/run"
    fs.rm(root, recursive=True)


def _without_location(summary: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in summary.items() if k not in WHERE_IT_LIES}


def test_the_summary_by_url_is_the_local_summary(remote_run: str) -> None:
    local = autoprof.load(RUN).summary()
    run = autoprof.load(remote_run)
    by_url = run.summary()
    assert isinstance(run.path, RemoteFile) and str(run.path) == remote_run
    assert [str(p).rsplit("/", 1)[-1] for p in run.trace_paths] == [
        p.rsplit("/", 1)[-1] for p in local["trace_paths"]]
    assert all(str(p).endswith(".json.gz") for p in run.trace_paths)  # gzip streamed
    assert json.dumps(_without_location(by_url), sort_keys=True) == json.dumps(
        _without_location(local), sort_keys=True)


def _plain_trace(folder: Path) -> Path:
    """The run's rank-0 trace, uncompressed."""
    packed = sorted(RUN.glob("rank0.*.json.gz"))[0]
    plain = folder / packed.name.removesuffix(".gz")
    plain.write_bytes(gzip.decompress(packed.read_bytes()))
    return plain


def test_a_plain_trace_by_url_is_the_local_trace(tmp_path: Path) -> None:
    fs = fsspec.filesystem("memory")
    plain = _plain_trace(tmp_path)
    url = f"memory://autoprof-test-{uuid.uuid4().hex}/{plain.name}"
    fs.pipe(url, plain.read_bytes())
    try:
        local, remote = autoprof.load(plain), autoprof.load(url)
        assert remote.events.equals(local.events)
        assert remote.trace_metadata == local.trace_metadata
    finally:
        fs.rm(url)


def test_the_map_by_url_is_the_local_map(remote_run: str, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOPROF_CACHE_DIR", str(tmp_path / "cache"))
    local = summarize_ranks(RUN, use_cache=False).to_dict()
    answer = summarize_ranks(remote_run, use_cache=True).to_dict()
    for report in (local, answer):  # the same answer; only where the traces are differs
        del report["path"], report["trace_paths"]
        for row in report["ranks"]:
            row.pop("trace", None)
    assert json.dumps(answer, sort_keys=True, default=str) == json.dumps(
        local, sort_keys=True, default=str)


def test_a_url_rank_result_is_cached_on_this_machine(remote_run: str, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOPROF_CACHE_DIR", str(tmp_path / "cache"))
    task = rank_tasks(remote_run, use_cache=True)[0]
    assert rank_map.read_cached(task) is None
    result = rank_map.analyse_rank(task)
    cached = rank_map.cache_path(task.trace)
    assert cached.parent == tmp_path / "cache" / "ranks" and cached.is_file()
    assert rank_map.read_cached(task) == result
    fsspec.filesystem("memory").pipe(task.trace, (RUN / RemoteFile(task.trace).name)
                                     .read_bytes() + b"\n")  # a new object at the same URL
    assert rank_map.read_cached(task) is None


def test_a_missing_url_is_one_line_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"memory://autoprof-test-{uuid.uuid4().hex}/nothing"
    with pytest.raises(TraceError, match="no such file or folder") as err:
        autoprof.load(url)
    assert str(err.value).startswith(url)
    assert main(["summary", url]) == 2
    assert main(["summary", url, "--jobs", "1"]) == 2
    stderr = capsys.readouterr().err
    assert stderr.count(f"autoprof: error: {url}: no such file or folder") == 2
    assert "Traceback" not in stderr


def test_the_cli_summary_by_url(remote_run: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["summary", str(RUN), "--json"]) == 0
    local = json.loads(capsys.readouterr().out)
    assert main(["summary", remote_run, "--json"]) == 0
    by_url = json.loads(capsys.readouterr().out)
    assert _without_location(by_url) == _without_location(local)


def test_a_url_without_fsspec_says_pip_install(monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    for name in [m for m in sys.modules if m == "fsspec" or m.startswith("fsspec.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "fsspec", None)  # import fsspec raises ImportError
    with pytest.raises(TraceError, match="pip install fsspec"):
        autoprof.load("s3://bucket/run")
    assert main(["summary", "s3://bucket/run"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("autoprof: error: s3://bucket/run: ") and "pip install fsspec" in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_a_local_path_never_takes_the_url_path(monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    plain = _plain_trace(tmp_path)
    monkeypatch.setitem(sys.modules, "fsspec", None)  # local loads must not need fsspec
    assert autoprof.load(str(plain)).events.equals(autoprof.load(plain).events)
    assert len(autoprof.load(RUN).trace_paths) == 2
