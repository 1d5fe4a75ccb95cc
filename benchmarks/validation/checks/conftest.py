"""The lab's checks write any recording under their own temporary folder, as the unit tests do."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _traces_in_tmp(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AUTOPROF_DIR", str(tmp_path / "traces"))
