"""autoprof never raises its own errors into the program and never stalls its exit: a region
entered fewer times than its schedule needs, then ``flush()``; an event the session's table
refuses; a callback hook that fails inside autoprof; every hook of both trainer callbacks."""

from __future__ import annotations

import ast
import inspect
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

from autoprof.record.session import actions, after_window, interrupt, table
from autoprof.record.session.table import TABLE, Event

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "tests" / "integrations" / "scripts"


def _events_fired_by_actions() -> dict[str, set[str]]:
    """action method name -> the events it fires (``self._fire(Event.X)`` in its body)."""
    fired: dict[str, set[str]] = {}
    nodes = [node for module in (actions, after_window, interrupt)
             for node in ast.walk(ast.parse(inspect.getsource(module)))]
    for node in nodes:
        if isinstance(node, ast.FunctionDef):
            fired[node.name] = {
                call.args[0].attr for call in ast.walk(node)
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr == "_fire" and call.args
                and isinstance(call.args[0], ast.Attribute)}
    return fired


def test_every_event_an_action_fires_is_accepted_in_the_state_its_row_enters() -> None:
    # the class of the refused `after_timed` in `done`: a row's action firing an event the
    # row's own target state has no entry for
    fired = _events_fired_by_actions()
    assert fired["_time_after_window"] == {"AFTER_TIMED"}  # the scan sees the known case
    wrong = [(state.value, event.value, action, name)
             for (state, event), row in TABLE.items() for action in row.actions
             for name in fired.get(action, ()) if (row.to, Event[name]) not in TABLE]
    assert wrong == []


def _region_entries(name: str, entries: int, out_dir: Path) -> None:
    import torch

    import autoprof

    for _ in range(entries):
        with autoprof.region(name, out_dir=str(out_dir), warmup_calls=1,
                             schedule={"wait": 0, "warmup": 1, "active": 3}):
            torch.ones(4) @ torch.ones(4)


@pytest.mark.parametrize("entries", [0, 1, 2, 3, 4])
def test_flush_after_fewer_entries_than_the_schedule_needs_never_raises(
        tmp_path: Path, entries: int) -> None:
    import autoprof

    name = f"short-region-{entries}"
    _region_entries(name, entries, tmp_path)
    started = time.monotonic()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        autoprof.flush()
    assert time.monotonic() - started < 20  # the finisher is let go: no 30 s timeout
    assert not [w for w in caught if "internal problem" in str(w.message)]
    for manifest in tmp_path.glob(f"{name}/*/manifest.json"):
        assert json.loads(manifest.read_text())["status"] in ("partial", "failed")


def test_a_refused_event_is_one_warning_and_lets_the_finisher_go(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import autoprof
    from autoprof.record.decorator import _regions
    from autoprof.record.session import core

    _region_entries("refused-region", 2, tmp_path)  # warm-up, then the profiler records
    session = _regions["refused-region"]
    assert session._finisher is not None and not session.done

    def refuse(state: Any, event: Any) -> Any:
        raise table.Refused(f"autoprof: {event.value} refused in state {state.value}")

    monkeypatch.setattr(core, "step", refuse)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        autoprof.flush()  # raised Refused into the program before
        _region_entries("refused-region", 2, tmp_path)  # the program goes on, unprofiled
    assert [str(w.message) for w in caught if "internal problem" in str(w.message)]
    assert session.done and session._finisher is None  # nothing left to wait for at exit
    monkeypatch.undo()


def _run(code: str, *args: str, timeout_s: float = 120) -> tuple[subprocess.CompletedProcess[str],
                                                                  float]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=timeout_s, env=env, cwd=REPO)
    return done, time.monotonic() - started


@pytest.mark.slow
def test_a_short_region_then_flush_exits_at_once_with_a_true_status(tmp_path: Path) -> None:
    code = (
        "import sys, torch, autoprof\n"
        "for _ in range(4):\n"
        "    with autoprof.region('fwd', out_dir=sys.argv[1]):\n"
        "        torch.ones(8) @ torch.ones(8)\n"
        "autoprof.flush()\n"
        "print('AFTER FLUSH', flush=True)\n")
    done, wall_s = _run(code, str(tmp_path))
    assert done.returncode == 0 and "AFTER FLUSH" in done.stdout, done.stderr[-3000:]
    assert "Refused" not in done.stderr and "Traceback" not in done.stderr
    assert wall_s < 20, wall_s  # was ~31 s: exit waited out the finisher's timeout
    (manifest,) = tmp_path.glob("fwd/*/manifest.json")
    assert json.loads(manifest.read_text())["status"] == "partial"


@pytest.mark.slow
def test_lightning_fit_with_fewer_batches_than_the_schedule_returns(tmp_path: Path) -> None:
    pytest.importorskip("lightning")
    code = (
        "import runpy, sys\n"
        "sys.argv = ['lightning_trainer.py', sys.argv[1], '1', '5']\n"
        f"runpy.run_path({str(SCRIPTS / 'lightning_trainer.py')!r}, run_name='__main__')\n"
        "print('AFTER FIT', flush=True)\n")
    done, wall_s = _run(code, str(tmp_path), timeout_s=300)
    assert done.returncode == 0 and "AFTER FIT" in done.stdout, done.stderr[-3000:]
    assert "Refused" not in done.stderr
    (manifest,) = tmp_path.glob("lightning_train_step/*/manifest.json")
    assert json.loads(manifest.read_text())["status"] == "partial"


def _callback_classes() -> list[type]:
    found = []
    for module in ("lightning", "transformers"):
        try:
            imported = __import__(f"autoprof.integrations.{module}", fromlist=["x"])
        except ImportError:
            continue
        found.append(imported.AutoprofCallback)
    if not found:
        pytest.skip("neither lightning nor transformers is installed")
    return found


def test_callback_runs_are_named_after_their_trainer() -> None:
    names = {cls.__module__.rsplit(".", 1)[1]: cls().name for cls in _callback_classes()}
    assert names.get("lightning", "lightning_train_step").startswith("lightning_train_step")
    assert names.get("transformers", "hf_train_step").startswith("hf_train_step")


def test_no_callback_hook_raises_autoprofs_own_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import autoprof

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise table.Refused("autoprof: an internal error")

    monkeypatch.setattr(autoprof, "region", broken)
    monkeypatch.setattr(autoprof, "flush", broken)
    for cls in _callback_classes():
        callback = cls(warmup_calls=0, schedule={"wait": 0, "warmup": 0, "active": 1})
        hooks = [n for n in dir(cls) if n.startswith("on_") and n in vars(cls)]
        assert "on_train_end" in hooks
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for hook in hooks:
                method = getattr(callback, hook)
                nargs = len(inspect.signature(method).parameters)
                method(*[None] * nargs) if "kwargs" not in inspect.signature(
                    method).parameters else method(None, None, None)
        # one warning for the first failure; the callback then does nothing
        assert len([w for w in caught if "profiling of" in str(w.message)]) == 1
        assert not callback.recorder.enabled
