"""Helpers for the what-if tests: a flush of any session a test left, small call builders."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _flush_sessions():
    yield
    import sys

    session = sys.modules.get("autoprof._session")
    if session is not None:
        session.flush_all()
