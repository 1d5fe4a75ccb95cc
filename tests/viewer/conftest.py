"""Viewer fixtures: traces folders built from the real H200 traces, plus bad and odd runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.viewer import add_cpu, add_evil, add_failed, add_h200, add_multirank, add_sweep

BUILDERS = {
    "empty": [], "h200": [add_h200], "evil": [add_evil], "failed": [add_failed, add_h200],
    "multirank": [add_multirank], "cpu": [add_cpu], "sweep": [add_sweep],
    "browser": [add_h200, add_evil, add_multirank, add_sweep],
}


class Roots:
    """Traces folders by scenario, each built on first use (the CPU one runs torch)."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.built: dict[str, Path] = {}

    def __getitem__(self, key: str) -> Path:
        if key not in self.built:
            root = self.base / key
            root.mkdir()
            for build in BUILDERS[key]:
                build(root)
            self.built[key] = root
        return self.built[key]


@pytest.fixture(scope="session")
def roots(tmp_path_factory: pytest.TempPathFactory) -> Roots:
    """One traces folder per scenario: empty, h200, evil, failed, multirank, cpu, browser."""
    return Roots(tmp_path_factory.mktemp("viewer_traces"))
