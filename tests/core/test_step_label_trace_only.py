"""What the recorded steps cost less of must not change the trace: the step label (torch's
record_function ops without its class) and torch's ``trace_only`` stop (no events built for
``events()``) write the same events as torch's own ways."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.profiler as tp
from support.profile_events import profiled_events

from autoprof.record.session import label as label_mod
from autoprof.record.session.driver import record_function, trace_only


def test_trace_only_writes_the_same_events_and_fields(tmp_path):
    config = trace_only(with_stack=False)
    if not config:
        pytest.skip("this torch has no trace_only")
    plain = profiled_events(tmp_path / "plain.json", "cpu", profile_memory=True)
    lean = profiled_events(tmp_path / "trace_only.json", "cpu", profile_memory=True,
                           **config)
    assert lean == plain
    assert any(dict(args).get("Input Dims") for _, _, _, args in lean)  # shapes were kept


def test_trace_only_is_not_asked_for_with_stacks():
    assert trace_only(with_stack=True) == {}


def _labels(path: Path, label_class: Any) -> list[tuple[Any, ...]]:
    with tp.profile(activities=[tp.ProfilerActivity.CPU],
                    on_trace_ready=lambda p: p.export_chrome_trace(str(path)),
                    schedule=tp.schedule(wait=0, warmup=1, active=2)) as prof:
        for _ in range(3):
            rf = label_class("autoprof_label")
            rf.__enter__()
            torch.ones(4).add_(1)
            rf.__exit__(None, None, None)
            with label_class("autoprof::sync"):
                pass
            prof.step()
    trace = json.loads(path.read_text())
    return sorted((e["name"], e.get("cat"), e.get("ph"), tuple(sorted(e.get("args", {}))))
                  for e in trace["traceEvents"]
                  if e.get("name") in ("autoprof_label", "autoprof::sync"))


def test_the_step_label_writes_what_record_function_writes(tmp_path):
    lean = label_mod.step_label()
    assert lean is not record_function()  # this torch has the ops
    got = _labels(tmp_path / "lean.json", lean)
    assert len(got) == 4
    assert got == _labels(tmp_path / "torch.json", record_function())


def test_torch_record_function_labels_steps_while_a_cupti_monitor_collects(monkeypatch):
    """The experimental CUPTI monitor gets its annotations from record_function's class."""
    monitor = types.ModuleType("torch.profiler._cupti_monitor")
    monitor.get_monitor = lambda: object()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch.profiler._cupti_monitor", monitor)
    assert label_mod.step_label() is record_function()
    monitor.get_monitor = lambda: None  # type: ignore[attr-defined]
    assert label_mod.step_label() is not record_function()
