"""``--jobs N`` starts no more local processes than there are ranks left to analyse and cores
to run them; ``--dask ADDRESS`` that names no scheduler is one line and exit status 2."""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest

from autoprof.analysis.scale import ranks_run
from autoprof.analysis.scale.ranks_run import local_workers

DATA = Path(__file__).resolve().parents[2] / "data"
TWO_RANKS = sorted((DATA / "gpu_h200_x2" / "runs").glob("ddp_*/*/"))[0]


def test_workers_are_bounded_by_ranks_and_cores(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    assert local_workers(200, 1) == 1
    assert local_workers(100_000, 64) == 4
    assert local_workers(3, 64) == 3
    assert local_workers(0, 8) == 1 and local_workers(-5, 8) == 1


def test_run_map_starts_no_more_workers_than_ranks(monkeypatch):
    started: list[int] = []

    @contextmanager
    def pool(jobs: int) -> Iterator[ThreadPoolExecutor]:
        started.append(jobs)
        with ThreadPoolExecutor(max_workers=jobs) as executor:
            yield executor

    monkeypatch.setattr(ranks_run, "_pool", pool)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    answer = ranks_run.summarize_ranks(TWO_RANKS, jobs=100_000, use_cache=False)
    assert len(answer.ranks) == 2
    assert started == [2]  # two ranks: two workers, not 100,000


@pytest.mark.parametrize("address", ["tcp://[::1", "tcp://[not-an-address"])
def test_a_dask_address_that_does_not_parse_is_one_line(address, capsys):
    pytest.importorskip("distributed")
    from autoprof.cli import main

    assert main(["summary", str(TWO_RANKS), "--dask", address]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert err.startswith(f"autoprof: error: --dask {address!r}: ")
