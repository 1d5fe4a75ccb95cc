"""Loader test fixtures: paths to the H200 traces, and no cache files in the repo tree."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.loader_paths import MATMUL


@pytest.fixture(autouse=True)
def _no_cache_by_default(monkeypatch):
    """Loading a fixture must not write ``*.autoprof.arrow`` into tests/data; cache tests
    turn the cache back on over copies in tmp_path."""
    monkeypatch.setenv("AUTOPROF_CACHE", "0")


@pytest.fixture
def with_cache(monkeypatch):
    monkeypatch.setenv("AUTOPROF_CACHE", "1")
    monkeypatch.setenv("AUTOPROF_CACHE_MIN_BYTES", "0")  # cache even the small fixtures


@pytest.fixture
def trace_copy(tmp_path) -> Path:
    """A private copy of the 64x64 cold trace (safe to cache, touch or corrupt)."""
    target = tmp_path / "trace.json"
    shutil.copy(MATMUL / "n64_cold" / "trace.json", target)
    return target
