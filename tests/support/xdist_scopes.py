"""How `bash scripts/test.sh` spreads the suite over two pytest-xdist workers: by file, as
``--dist loadfile`` does (a module-scoped recording is made once), except that the files
that read every committed run share one worker, so that its session store
(support/store.py) loads and analyses each of those runs once, not once per worker; the
other worker reads the runs it needs from there as they are analysed
(support/store_shared.py).

tests/conftest.py registers this plugin only when xdist runs the session (``-n``).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling

from support.tiers import FIRST_FILES

# the files whose tests sweep the committed run folders (the same ~160 loads; the replay's
# over every committed GPU recording)
EVERY_COMMITTED_RUN = "every committed run"
SHARED_SCOPES: dict[str, str] = {
    "tests/analysis/report/test_report_model.py": EVERY_COMMITTED_RUN,
    "tests/integrations/test_schema.py": EVERY_COMMITTED_RUN,
    "tests/analysis/replay/test_replay_h200.py": EVERY_COMMITTED_RUN,
}


def scope_of(path: str) -> str:
    return SHARED_SCOPES.get(path, path)


def longest_first(workqueue: OrderedDict[str, Any]) -> OrderedDict[str, Any]:
    """The work queue with the scopes of ``FIRST_FILES`` (support/tiers.py) at its head, in
    that order, the others after them in the order xdist gave them (most tests first). xdist
    orders the queue by the number of tests of each scope, not by the collection's order
    (``--loadscope-reorder``, its default), which put the longest files, a few
    subprocess-heavy tests each, among the last scopes handed out."""
    head = [s for s in dict.fromkeys(scope_of(f) for f in FIRST_FILES) if s in workqueue]
    ordered = OrderedDict((s, workqueue[s]) for s in head)
    ordered.update((s, units) for s, units in workqueue.items() if s not in ordered)
    return ordered


class FileScopes(LoadScopeScheduling):
    """``--dist loadfile``, with the files of ``SHARED_SCOPES`` joined into one unit and the
    longest files handed out first (``longest_first``)."""

    _ordered = False

    def _split_scope(self, nodeid: str) -> str:
        return scope_of(nodeid.split("::", 1)[0])

    def _assign_work_unit(self, node: Any) -> None:
        if not self._ordered:  # the first unit: the queue is complete, nothing handed out
            self.workqueue = longest_first(self.workqueue)
            self._ordered = True
        super()._assign_work_unit(node)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> FileScopes | None:
    """Refines ``--dist loadfile`` (scripts/test.sh); any other ``--dist`` is xdist's own."""
    if config.getoption("dist") != "loadfile":
        return None
    return FileScopes(config, log)
