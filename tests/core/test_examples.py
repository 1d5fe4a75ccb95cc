"""The examples run end to end and leave complete runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _run(args: list[str], out: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, *args, "--out-dir", str(out)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=180,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow
def test_matmul_add_example(tmp_path):
    stdout = _run(["examples/matmul_add.py", "--size", "32"], tmp_path)
    (run,) = list((tmp_path / "matmul_add").iterdir())
    assert f"run folder: {run}" in stdout
    assert "verdict" in stdout
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["steps_recorded"] == 3
    assert len(manifest["warmup_call_ms"]) == 3


@pytest.mark.slow
def test_train_regions_example(tmp_path):
    stdout = _run(["examples/train_regions.py", "--steps", "9", "--width", "32"], tmp_path)
    assert "run folder" in stdout
    (run,) = list((tmp_path / "train_step").iterdir())
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train_step"]  # regions only label
