"""The session store of committed runs (tests/support/store.py): one load per run, private
summaries, and only runs that cannot change."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support import store_shared
from support.loader_paths import MATMUL
from support.store import CommittedRuns


def test_a_committed_run_is_loaded_once_and_its_summary_is_a_private_copy() -> None:
    store = CommittedRuns()
    trace = MATMUL / "n64_cold" / "trace.json"
    assert store.run(trace) is store.run(Path(str(trace)).parent / "." / "trace.json")
    assert store.loads == 1
    first = store.summary(trace)
    first["verdict"] = "edited by a test"
    assert store.summary(trace)["verdict"] != "edited by a test"
    assert store.loads == 1


def test_a_run_outside_the_committed_folders_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "trace.json"
    shutil.copy(MATMUL / "n64_cold" / "trace.json", copy)
    with pytest.raises(ValueError, match="not a committed run"):
        CommittedRuns().run(copy)


def test_workers_of_one_session_share_each_analysed_run(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Under xdist the controller names a folder (support/store_shared.py): the first store to
    ask for a run loads and analyses it, a second (another worker) reads it from there."""
    monkeypatch.setenv(store_shared.ENV, str(tmp_path))
    trace = MATMUL / "n64_cold" / "trace.json"
    first, second = CommittedRuns(shared=True), CommittedRuns(shared=True)
    run = first.run(trace)
    assert first.loads == 1 and len(list(tmp_path.glob("*.pickle"))) == 1
    again = second.run(trace)
    assert second.loads == 0 and again is not run  # read from the folder, not loaded
    assert again.summary() == run.summary()
    assert again.events.equals(run.events)
    monkeypatch.delenv(store_shared.ENV)
    alone = CommittedRuns(shared=True)
    alone.run(trace)
    assert alone.loads == 1  # no folder (one process): loaded in process
