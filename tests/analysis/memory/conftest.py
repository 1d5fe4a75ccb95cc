from __future__ import annotations

from pathlib import Path

import pytest
from support.memory_record import record, record_plain


@pytest.fixture(scope="session")
def leak_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record(tmp_path_factory.mktemp("mem") / "leak.json", steps=3, leak=True)


@pytest.fixture(scope="session")
def steady_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record(tmp_path_factory.mktemp("mem") / "steady.json", steps=3, leak=False)


@pytest.fixture(scope="session")
def plain_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record_plain(tmp_path_factory.mktemp("mem") / "plain.json")
