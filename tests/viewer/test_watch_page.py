"""The Steps page of a watched job draws its step time over all calls with the windows marked,
from the healthy run folder's watch.json, on the healthy window and on a triggered one."""

from __future__ import annotations

import json

from support.apptest import chart_data, open_app, select_run, visit


def _watched_job(root):
    import torch

    from autoprof import autoprof

    @autoprof(out_dir=str(root), name="watched", activities=["cpu"],
              watch={"at_calls": [40], "signal": False})
    def step(x):
        return (x @ x).sum()

    x = torch.randn(16, 16)
    for _ in range(80):
        step(x)
    autoprof.flush()
    for window in step.autoprof_session.watcher.opened:
        window.flush()
    runs = sorted((root / "watched").iterdir(),
                  key=lambda r: json.loads((r / "manifest.json").read_text())["started_at"])
    return runs


def test_the_steps_page_marks_the_windows(tmp_path, monkeypatch):
    healthy, triggered = _watched_job(tmp_path)
    log = json.loads((healthy / "watch.json").read_text())
    for run in (triggered, healthy):
        at = visit(select_run(open_app(tmp_path, monkeypatch), run.name), "steps")
        assert "Step time over the job (watched)" in [s.value for s in at.subheader]
        frames = chart_data(at)
        lines = [f for f in frames if list(f.columns) == ["call", "step_ms"]]
        assert len(lines) == 1 and lines[0]["call"].tolist() == [c for c, _ in log["points"]]
        rules = [f for f in frames if "trigger" in f.columns]
        assert rules and rules[0]["call"].tolist() == [40]
        assert rules[0]["run"].tolist() == [triggered.name]


def test_a_triggered_window_s_overview_leads_with_its_comparison(tmp_path, monkeypatch):
    healthy, triggered = _watched_job(tmp_path)
    at = visit(select_run(open_app(tmp_path, monkeypatch), triggered.name), "overview")
    assert at.warning and at.warning[0].value.startswith("**Triggered window 1**")
    assert healthy.name in at.warning[0].value.replace("\\", "")  # markdown-escaped
    (code,) = [c.value for c in at.code if c.value.startswith("TRIGGERED WINDOW 1")]
    assert "VERDICT" in code and "untraced step:" in code and "WHY: the profiled steps" in code
    assert "Untraced step time: **" in at.warning[0].value
    at = visit(select_run(open_app(tmp_path, monkeypatch), healthy.name), "overview")
    assert not any(str(c.value).startswith("TRIGGERED") for c in at.code)
