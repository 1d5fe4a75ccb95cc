from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _memory_record import record, record_plain  # noqa: E402


@pytest.fixture(scope="session")
def leak_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record(tmp_path_factory.mktemp("mem") / "leak.json", steps=3, leak=True)


@pytest.fixture(scope="session")
def steady_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record(tmp_path_factory.mktemp("mem") / "steady.json", steps=3, leak=False)


@pytest.fixture(scope="session")
def plain_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record_plain(tmp_path_factory.mktemp("mem") / "plain.json")
