"""The examples run end to end (in this process: no second torch start-up) and leave
complete runs."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]


def _example(name: str) -> ModuleType:
    path = REPO / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"example_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_matmul_add_example(tmp_path, capsys):
    assert _example("matmul_add").main(["--size", "32", "--out-dir", str(tmp_path)]) == 0
    stdout = capsys.readouterr().out
    (run,) = list((tmp_path / "matmul_add").iterdir())
    assert f"run folder: {run}" in stdout
    assert "verdict" in stdout
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["steps_recorded"] == 3
    assert len(manifest["warmup_call_ms"]) == 3
    assert manifest["options"]["schedule"]["active"] == 3


def test_matmul_add_example_without_warmup(tmp_path, capsys):
    assert _example("matmul_add").main(
        ["--size", "16", "--no-warmup", "--device", "cpu", "--out-dir", str(tmp_path)]
    ) == 0
    (run,) = list((tmp_path / "matmul_add").iterdir())
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["warmup_call_ms"] == [] and manifest["status"] == "complete"


def test_train_regions_example(tmp_path, capsys):
    args = ["--steps", "9", "--width", "32", "--out-dir", str(tmp_path)]
    assert _example("train_regions").main(args) == 0
    assert "run folder" in capsys.readouterr().out
    (run,) = list((tmp_path / "train_step").iterdir())
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train_step"]  # regions only label


def test_examples_run_with_autoprof_off(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("AUTOPROF", "0")
    assert _example("matmul_add").main(["--size", "8", "--out-dir", str(tmp_path)]) == 0
    assert _example("train_regions").main(
        ["--steps", "2", "--width", "8", "--out-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.count("autoprof is off (AUTOPROF=0)") == 2
    assert list(tmp_path.iterdir()) == []
