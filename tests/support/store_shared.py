"""The committed runs' analyses shared between the pytest-xdist workers of one session.

Each worker has its own store (support/store.py), so two workers that read the same committed
run would each load and analyse it. Under xdist (``-n``), the controller makes one folder for
the session (``AUTOPROF_TEST_SHARED_RUNS``, named to the workers through their environment,
removed when the session ends); a worker that needs a run takes the run's lock file there,
and either reads the analysed ``Run`` another worker left (a pickle) or loads it, computes its
summary (which computes the analysis most tests read) and leaves it for the other. The other
worker waits on the lock meanwhile instead of analysing the same run beside it.

Only the session's own folder is read, so nothing outlives the session: a pickle is never
older than the code that wrote it. Without the variable (one process, ``-n 0``, the quick
tier) nothing is shared and each run is loaded in process as before.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import pickle
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from autoprof.analysis import Run

ENV = "AUTOPROF_TEST_SHARED_RUNS"

__all__ = ["ENV", "shared_folder", "shared_run"]


def shared_folder() -> Path | None:
    """The session's shared folder, when the controller made one."""
    text = os.environ.get(ENV, "").strip()
    return Path(text) if text and Path(text).is_dir() else None


def _analysed(run: Run) -> None:
    """Compute what most readers ask for (the summary runs every metric and check), outside
    every cache beside the traces; a run whose summary fails is shared as loaded."""
    from autoprof.analysis.report.summary import summarize

    try:
        summarize(run)
    except Exception:  # the reading test meets the same error itself
        pass


def shared_run(folder: Path, key: str, load: Callable[[], Run]) -> Run:
    """The run named ``key``: another worker's pickle from ``folder`` if there is one, else
    ``load()`` analysed and pickled there for the other workers (under the key's lock)."""
    name = hashlib.sha256(key.encode()).hexdigest()[:32]
    pickled = folder / f"{name}.pickle"
    with open(folder / f"{name}.lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if pickled.exists():
            with open(pickled, "rb") as f:
                run: Run = pickle.load(f)
            return run
        run = load()  # a TraceError reaches the test; nothing is shared
        _analysed(run)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                pickle.dump(run, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, pickled)
        except (OSError, pickle.PicklingError, TypeError, AttributeError):
            Path(tmp).unlink(missing_ok=True)  # not shared: the other worker loads its own
        return run
