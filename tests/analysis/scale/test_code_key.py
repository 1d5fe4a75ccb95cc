"""The per-rank cache's code key is the code the map ran: the package's files the process
had imported. An edit to one of them recomputes the rank; an edit to any other file (the
viewer, the recorder, the CLI, the run diff) keeps the cache."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autoprof.analysis import cache_key as code_key
from autoprof.analysis.scale import rank_map, summarize_ranks

REPO = Path(__file__).resolve().parents[3]
STRAGGLER = next((REPO / "tests/data/gpu_h200_x2/runs/ddp_straggler").glob("*/"))

MAP_ONE_RANK = r"""
import json, sys
from autoprof.analysis.scale import rank_map
from autoprof.analysis.cache_key import loaded_files
trace = sorted(__import__("pathlib").Path(sys.argv[1]).glob("rank0.*.pt.trace.json.gz"))[0]
rank_map.compute_rank(rank_map.RankTask(str(trace), None, 2))
print(json.dumps(loaded_files()))
"""


def test_the_key_names_what_the_map_ran_and_not_the_rest() -> None:
    done = subprocess.run([sys.executable, "-c", MAP_ONE_RANK, str(STRAGGLER)], cwd=REPO,
                          capture_output=True, text=True, timeout=300, check=True)
    names = set(json.loads(done.stdout.strip().splitlines()[-1]))
    for needed in ("analysis/scale/rank_map.py", "analysis/loader/decode.py",
                   "analysis/loader/chunks.py", "analysis/metrics/breakdown.py",
                   "analysis/report/summary.py", "analysis/analysis.py", "units.py"):
        assert needed in names, needed
    assert not any(n.startswith(("viewer/", "record/", "analysis/diff/")) for n in names)
    assert "cli.py" not in names


def test_an_entry_is_valid_while_its_files_hash_the_same(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.py").write_text("y = 1\n")
    entry = {"files": ["a.py"], "hash": code_key.files_hash(("a.py",), tmp_path)}
    assert code_key.code_key_valid(entry, tmp_path)
    (tmp_path / "b.py").write_text("y = 2\n")  # not a file the computation ran
    code_key.files_hash.cache_clear()  # a new process
    assert code_key.code_key_valid(entry, tmp_path)
    (tmp_path / "a.py").write_text("x = 2\n")
    code_key.files_hash.cache_clear()
    assert not code_key.code_key_valid(entry, tmp_path)
    (tmp_path / "a.py").unlink()
    code_key.files_hash.cache_clear()
    assert not code_key.code_key_valid(entry, tmp_path)
    for bad in (None, {}, {"files": "a.py", "hash": "x"}, {"files": [1], "hash": "x"}):
        assert not code_key.code_key_valid(bad, tmp_path)


def test_a_cache_whose_code_changed_is_recomputed(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    run = tmp_path / "run"
    shutil.copytree(STRAGGLER, run)
    summarize_ranks(run, use_cache=True)
    (cache,) = sorted(run.glob("rank0.*" + rank_map.SUFFIX))
    entry = json.loads(cache.read_text())
    assert "analysis/loader/decode.py" in entry["code"]["files"]
    computed: list[str] = []
    real = rank_map.compute_rank
    monkeypatch.setattr(rank_map, "compute_rank",
                        lambda task: computed.append(task.trace) or real(task))
    summarize_ranks(run, use_cache=True)
    assert computed == []  # same code: read from the caches
    entry["code"]["hash"] = "0" * 64  # as if one of its files had been edited
    cache.write_text(json.dumps(entry))
    summarize_ranks(run, use_cache=True)
    assert [Path(t).name for t in computed] == [cache.name[: -len(rank_map.SUFFIX)]]
