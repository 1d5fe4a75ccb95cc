"""How `bash scripts/test.sh` spreads the suite over two pytest-xdist workers: by file, as
``--dist loadfile`` does (a module-scoped recording is made once), except that the files
that read every committed run share one worker, so that its session store
(support/store.py) loads and analyses each of those runs once, not once per worker; the
other worker reads the runs it needs from there as they are analysed
(support/store_shared.py).

tests/conftest.py registers this plugin only when xdist runs the session (``-n``).
"""

from __future__ import annotations

from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling

# the files whose tests sweep the committed run folders (the same ~160 loads; the replay's
# over every committed GPU recording)
EVERY_COMMITTED_RUN = "every committed run"
SHARED_SCOPES: dict[str, str] = {
    "tests/analysis/report/test_report_model.py": EVERY_COMMITTED_RUN,
    "tests/integrations/test_schema.py": EVERY_COMMITTED_RUN,
    "tests/analysis/replay/test_replay_h200.py": EVERY_COMMITTED_RUN,
}


class FileScopes(LoadScopeScheduling):
    """``--dist loadfile``, with the files of ``SHARED_SCOPES`` joined into one unit."""

    def _split_scope(self, nodeid: str) -> str:
        path = nodeid.split("::", 1)[0]
        return SHARED_SCOPES.get(path, path)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> FileScopes | None:
    """Refines ``--dist loadfile`` (scripts/test.sh); any other ``--dist`` is xdist's own."""
    if config.getoption("dist") != "loadfile":
        return None
    return FileScopes(config, log)
