"""What-if tests: any profiling run a test left open is finished after it."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _flush_sessions():
    yield
    import sys

    session = sys.modules.get("autoprof.record.session")
    if session is not None:
        session.flush_all()
