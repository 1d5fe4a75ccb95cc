"""A cache proves it is whole or is ignored and rebuilt: the same answer as no cache, never a
traceback, never a 0-event answer. The Arrow events cache and the per-rank results, with
their key left right and their content cut, reordered, garbled or forged; a FIFO or a link
at any cache name never hangs ``autoprof summary`` and is never written through."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest
from support.synthetic import write_synthetic_trace

import autoprof.analysis.loader.formats as formats_module
from autoprof.analysis import load
from autoprof.analysis.loader import cache as arrow_cache
from autoprof.analysis.report import summary_cache
from autoprof.analysis.scale import rank_map, summarize_ranks
from autoprof.analysis.scale.ranks_run import rank_tasks

REPO = Path(__file__).resolve().parents[2]
STRAGGLER = next((REPO / "tests" / "data" / "gpu_h200_x2" / "runs" / "ddp_straggler").glob("*/"))
SECRET = b"outside the run folder: must never change\n"


@pytest.fixture(autouse=True)
def _caches_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOPROF_CACHE", "1")
    monkeypatch.setenv("AUTOPROF_CACHE_MIN_BYTES", "0")  # cache even these small traces


# --- the Arrow events cache ---------------------------------------------------------------

def _rewrite(path: Path, change: Callable[[pa.Table], pa.Table]) -> None:
    """Rewrite the cache with its schema metadata (key, checksum) kept, its table changed."""
    with pa.memory_map(str(path)) as source:
        table = ipc.open_file(source).read_all()
    changed = change(table).replace_schema_metadata(table.schema.metadata)
    data = pa.BufferOutputStream()
    with ipc.new_file(data, changed.schema) as writer:
        writer.write_table(changed)
    path.write_bytes(data.getvalue().to_pybytes())


def _scaled(table: pa.Table, name: str, factor: float) -> pa.Table:
    index = table.schema.get_field_index(name)
    column = pa.array(table.column(name).to_numpy() * factor)
    return table.set_column(index, name, column)


ARROW_DAMAGE: dict[str, Callable[[Path], None]] = {
    "rows removed": lambda p: _rewrite(p, lambda t: t.slice(0, 0)),
    "half the rows removed": lambda p: _rewrite(p, lambda t: t.slice(0, len(t) // 2)),
    "rows reordered": lambda p: _rewrite(p, lambda t: t.take(list(range(len(t)))[::-1])),
    "values garbled": lambda p: _rewrite(p, lambda t: _scaled(t, "dur_us", 2.0)),
    "bytes garbled": lambda p: p.write_bytes(p.read_bytes()[:300] + b"\xff" * 64
                                             + p.read_bytes()[364:]),
    "cut short": lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]),
}


@pytest.mark.parametrize("damage", sorted(ARROW_DAMAGE))
def test_a_damaged_arrow_cache_is_ignored_and_rebuilt(tmp_path: Path, damage: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    trace = tmp_path / "trace.json"
    write_synthetic_trace(trace, 3000, seed=1)
    expected = load(trace).events
    arrow_cache.wait_for_writes()
    assert len(expected) > 1000 and arrow_cache.cache_path(trace).is_file()
    ARROW_DAMAGE[damage](arrow_cache.cache_path(trace))
    again = load(trace)
    arrow_cache.wait_for_writes()
    assert again.events.equals(expected)
    # rebuilt: the next load reads the cache, and it is whole again
    monkeypatch.setattr(formats_module, "read", _refuse)
    assert load(trace).events.equals(expected)


def _refuse(*args: object, **kwargs: object) -> object:
    raise AssertionError("the trace was decoded although the rebuilt cache should answer")


def test_the_checksum_is_what_rejects_a_cache_with_its_key_right(tmp_path: Path) -> None:
    """With the checksum check bypassed, the same damage would be taken: the check is
    what this class of test exercises (it can fail)."""
    trace = tmp_path / "trace.json"
    write_synthetic_trace(trace, 3000, seed=1)
    load(trace)
    arrow_cache.wait_for_writes()
    ARROW_DAMAGE["rows removed"](arrow_cache.cache_path(trace))
    notes: list[str] = []
    assert arrow_cache.read_cache(trace, notes) is None
    assert notes and "checksum" in notes[0]


# --- the per-rank results -----------------------------------------------------------------

def _edit_result(path: Path, change: Callable[[dict[str, Any]], None],
                 reseal: bool = False) -> None:
    stored = json.loads(path.read_text())
    result = json.loads(stored["result"])
    change(result)
    stored["result"] = json.dumps(result)
    if reseal:  # a forger who knows the checksum's rule
        stored["result_sha256"] = rank_map._sha256(stored["result"])
    path.write_text(json.dumps(stored))


def _set(key: str, value: object) -> Callable[[dict[str, Any]], None]:
    return lambda result: result.__setitem__(key, value)


RANK_DAMAGE: dict[str, Callable[[Path], None]] = {
    "events zeroed": lambda p: _edit_result(p, _set("events", 0)),
    "steps removed": lambda p: _edit_result(p, _set("step_times_us", [])),
    "steps reordered": lambda p: _edit_result(
        p, lambda r: r.__setitem__("step_times_us", r["step_times_us"][::-1])),
    "garbled text": lambda p: p.write_bytes(p.read_bytes().replace(b'"', b"'", 7)),
    "cut short": lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]),
    "forged: a field of the wrong type": lambda p: _edit_result(p, _set("row", "x"), True),
    "forged: a field missing": lambda p: _edit_result(p, lambda r: r.pop("top_ops"), True),
    "forged: a list of text for numbers": lambda p: _edit_result(
        p, _set("step_times_us", ["1", "2"]), True),
    "not JSON at all": lambda p: p.write_bytes(os.urandom(512)),
}


@pytest.fixture(scope="module")
def no_cache_answer() -> dict[str, Any]:
    return summarize_ranks(STRAGGLER, use_cache=False).to_dict()


@pytest.mark.parametrize("damage", sorted(RANK_DAMAGE))
def test_a_damaged_rank_result_is_recomputed(tmp_path: Path, damage: str,
                                             no_cache_answer: dict[str, Any]) -> None:
    run = tmp_path / "run"
    shutil.copytree(STRAGGLER, run)
    assert summarize_ranks(run, use_cache=True).to_dict()["ranks"]
    caches = sorted(run.glob("*" + rank_map.SUFFIX))
    assert len(caches) == 2
    for cache in caches:
        RANK_DAMAGE[damage](cache)
    tasks = rank_tasks(run, use_cache=True)
    assert [rank_map.read_cached(t) for t in tasks] == [None, None]  # seen as damaged
    answer = summarize_ranks(run, use_cache=True).to_dict()
    _same_answer(answer, no_cache_answer)
    assert all(rank_map.read_cached(t) is not None for t in tasks)  # rewritten whole


def _same_answer(ours: dict[str, Any], expected: dict[str, Any]) -> None:
    """Equal but for the trace paths (the run was copied)."""
    assert ours["events"] == expected["events"] > 0
    assert [r["rank"] for r in ours["ranks"]] == [r["rank"] for r in expected["ranks"]]
    assert ours["straggler_rank"] == expected["straggler_rank"]
    assert ours["breakdown"] == expected["breakdown"]


def test_an_intact_rank_result_is_still_read_back(tmp_path: Path) -> None:
    """The control: an undamaged cache is taken (so a None above means 'damaged')."""
    run = tmp_path / "run"
    shutil.copytree(STRAGGLER, run)
    summarize_ranks(run, use_cache=True)
    assert all(rank_map.read_cached(t) is not None for t in rank_tasks(run, use_cache=True))


def test_a_link_at_the_old_rank_temporary_name_is_never_written_through(
        tmp_path: Path, no_cache_answer: dict[str, Any]) -> None:
    """The per-rank cache once wrote ``.<cache>.<pid>.tmp`` following links."""
    run = tmp_path / "run"
    shutil.copytree(STRAGGLER, run)
    victim = tmp_path / "victim.txt"
    victim.write_bytes(SECRET)
    links = []
    for trace in sorted(run.glob("*.pt.trace.json.gz")):
        cache = rank_map.cache_path(trace)
        links.append(cache.with_name(f".{cache.name}.{os.getpid()}.tmp"))
        links[-1].symlink_to(victim)
    _same_answer(summarize_ranks(run, use_cache=True).to_dict(), no_cache_answer)
    assert victim.read_bytes() == SECRET and all(link.is_symlink() for link in links)
    assert len(list(run.glob("*" + rank_map.SUFFIX))) == 2  # the caches were written


# --- every cache name, through the CLI ------------------------------------------------------

def _cache_names(run: Path) -> list[Path]:
    traces = sorted(run.glob("*.pt.trace.json.gz"))
    return [*(rank_map.cache_path(t) for t in traces),
            *(arrow_cache.cache_path(t) for t in traces),
            summary_cache.summary_path(traces[0])]


@pytest.mark.parametrize("planted", ["fifo", "link"])
@pytest.mark.parametrize("jobs", [[], ["--jobs", "2"]], ids=["one process", "--jobs 2"])
def test_summary_never_hangs_on_or_writes_through_what_is_named_like_a_cache(
        tmp_path: Path, planted: str, jobs: list[str]) -> None:
    run = tmp_path / "run"
    shutil.copytree(STRAGGLER, run)
    victim = tmp_path / "victim.txt"
    victim.write_bytes(SECRET)
    names = _cache_names(run)
    for name in names:
        if planted == "fifo":
            os.mkfifo(name)
        else:
            name.symlink_to(victim)
    env = {**os.environ, "PYTHONPATH": str(REPO), "AUTOPROF_CACHE": "1",
           "AUTOPROF_CACHE_MIN_BYTES": "0"}
    done = subprocess.run([sys.executable, "-m", "autoprof", "summary", *jobs, str(run)],
                          capture_output=True, text=True, timeout=240, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "rank" in done.stdout
    assert victim.read_bytes() == SECRET
    for name in names:
        assert name.is_fifo() if planted == "fifo" else name.is_symlink()
