"""A trainer's callback with ``watch=...`` goes on timing its steps after the first window and
records a triggered window of them, its phases labelled inside its steps (the callbacks'
StepRecorder driven by hand, as a trainer's hooks do)."""

from __future__ import annotations

import json
from pathlib import Path

import torch

import autoprof
from autoprof.analysis import load
from autoprof.integrations._steps import StepRecorder


def test_a_watched_trainer_records_a_triggered_window(tmp_path: Path) -> None:
    recorder = StepRecorder("integration-watched", {
        "out_dir": str(tmp_path), "activities": ["cpu"],
        "watch": {"at_calls": [30], "signal": False}})
    x, w = torch.randn(16, 16), torch.randn(16, 16)
    for _ in range(50):
        recorder.begin_step()
        recorder.phase("forward")
        (x @ w).relu()
        recorder.phase("optimizer")
        w.add_(0.0)
        recorder.end_step()
    recorder.finish()
    autoprof.flush()
    runs = sorted(tmp_path.glob("integration-watched/*/manifest.json"))
    records = {p.parent: json.loads(p.read_text()) for p in runs}
    triggered = [d for d, r in records.items() if "trigger" in r]
    assert len(records) == 2 and len(triggered) == 1
    record = records[triggered[0]]
    assert record["trigger"]["kind"] == "call" and record["trigger"]["at_call"] == 30
    assert record["status"] == "complete" and record["steps_recorded"] == 3
    ops = load(triggered[0]).ops()
    labels = ops[ops["name"].isin(["integration-watched", "forward", "optimizer"])]
    assert dict(zip(labels["name"], labels["calls"], strict=True)) == {
        "integration-watched": 3, "forward": 3, "optimizer": 3}
