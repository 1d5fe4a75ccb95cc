"""The session store of committed runs (tests/support/store.py): one load per run, private
summaries, and only runs that cannot change."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
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
