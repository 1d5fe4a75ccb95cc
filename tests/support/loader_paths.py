"""Paths the loader tests share (a uniquely named module: every test folder has a
``conftest.py``, so ``from conftest import ...`` could find another folder's)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
H200 = REPO / "tests" / "data" / "h200"
MATMUL = H200 / "matmul_add"
BAD = REPO / "tests" / "data" / "bad"
H200_TRACES = sorted(H200.glob("*/*/trace.json"))
