"""Viewer fixtures: traces folders built from the real H200 traces, plus bad and odd runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from _viewer_support import add_cpu, add_evil, add_failed, add_h200, add_multirank


@pytest.fixture(scope="session")
def roots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One traces folder per scenario, plus 'browser' (H200 64 + 4096 + the evil run)."""
    base = tmp_path_factory.mktemp("viewer_traces")
    builders = {
        "empty": [], "h200": [add_h200], "evil": [add_evil], "failed": [add_failed, add_h200],
        "multirank": [add_multirank], "cpu": [add_cpu], "browser": [add_h200, add_evil],
    }
    out = {}
    for key, fns in builders.items():
        root = base / key
        root.mkdir()
        for fn in fns:
            fn(root)
        out[key] = root
    return out
