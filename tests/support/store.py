"""The committed runs (tests/data/, traces/examples/, the validation lab's truth sets, the diff
recordings of tests/analysis/diff/data/), each loaded and analysed once a session.

Dozens of test files load the same committed runs and ask them the same questions (the
summary, the verdict, the breakdown). ``committed.run(path)`` loads a run the first time it
is asked for and hands back that same ``Run`` afterwards, so its analysis (every number a
cached property) is computed once for the whole session; ``committed.summary(path)`` is its
``summary()``, computed once and handed out as a private copy.

Only committed, read-only folders are stored: a path outside them (a run a test recorded or
edited in ``tmp_path``) is refused, as such a run may change between two loads. A stored
``Run`` is shared: tests read it and never change it (a test that edits events or a summary
loads its own with ``autoprof.load``). Under pytest-xdist the workers share each analysed run
through a folder of the session (support/store_shared.py). The session fixture ``committed_runs``
(tests/conftest.py) hands out this store and empties it when the session ends.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import TYPE_CHECKING, Any

from support.store_shared import shared_folder, shared_run

if TYPE_CHECKING:
    from autoprof.analysis import Run
    from autoprof.analysis.analysis import AnalysisOptions

REPO = Path(__file__).resolve().parents[2]
COMMITTED = (REPO / "tests" / "data", REPO / "traces" / "examples",
             REPO / "benchmarks" / "validation" / "data",
             REPO / "tests" / "analysis" / "diff" / "data")

__all__ = ["COMMITTED", "CommittedRuns", "committed"]


def _committed_path(path: str | Path) -> Path:
    full = Path(path).resolve()
    if not any(full == root or root in full.parents for root in COMMITTED):
        raise ValueError(
            f"{path}: not a committed run (under tests/data, traces/examples, "
            "benchmarks/validation/data or tests/analysis/diff/data); load a run a test wrote "
            "with autoprof.load, the store keeps only runs that cannot change")
    return full


class CommittedRuns:
    """Committed runs by (resolved path, options): loaded and analysed at most once each."""

    def __init__(self, shared: bool = False) -> None:
        self._shared = shared  # between xdist workers, when the session has a folder for it
        self._runs: dict[tuple[Path, AnalysisOptions | None], Run] = {}
        self._summaries: dict[tuple[Path, AnalysisOptions | None], dict[str, Any]] = {}
        self.loads = 0  # how many times a run was really read (the store's own tests)

    def run(self, path: str | Path, options: AnalysisOptions | None = None) -> Run:
        """The one shared ``Run`` of the committed run or trace at ``path``."""
        key = (_committed_path(path), options)
        if key not in self._runs:
            folder = shared_folder() if self._shared else None
            if folder is None:
                self._runs[key] = self._load(key)
            else:
                self._runs[key] = shared_run(folder, repr(key), lambda: self._load(key))
        return self._runs[key]

    def _load(self, key: tuple[Path, AnalysisOptions | None]) -> Run:
        import autoprof

        self.loads += 1
        return autoprof.load(key[0], options=key[1])

    def summary(self, path: str | Path, options: AnalysisOptions | None = None) -> dict[str, Any]:
        """``run(path).summary()``, computed once; each caller gets its own copy to read."""
        key = (_committed_path(path), options)
        if key not in self._summaries:
            self._summaries[key] = self.run(path, options).summary()
        return copy.deepcopy(self._summaries[key])

    def clear(self) -> None:
        self._runs.clear()
        self._summaries.clear()


committed = CommittedRuns(shared=True)  # under xdist, one analysis per run for all the workers
