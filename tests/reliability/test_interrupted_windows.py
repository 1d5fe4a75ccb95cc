"""A window ended by the program's exception, Ctrl+C or SIGTERM, in the first window or a
triggered one: the steps already recorded are written, the run folder loads, its manifest
says ``partial`` with the reason (``ended_by``); the program's exception reaches it unchanged
and a signal keeps its meaning (the process still ends by it, or the program's own handler
runs). Real recordings; the signals in a subprocess."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import autoprof
from autoprof.analysis.report.text import render_summary
from autoprof.runfolder import Manifest, read_manifest

REPO = Path(__file__).resolve().parents[2]
SCHEDULE = dict(wait=0, warmup=1, active=4)  # after one warm-up call: calls 3-6 recorded


def _final(run_dir: Path, timeout_s: float = 90) -> Manifest:
    deadline = time.monotonic() + timeout_s
    while True:
        record = read_manifest(run_dir / "manifest.json", 1 << 20)
        if record.status != "recording" or time.monotonic() > deadline:
            return record
        time.sleep(0.2)


def _runs(out_dir: Path, name: str) -> list[Path]:
    return sorted(p.parent for p in out_dir.glob(f"{name}/*/manifest.json"))


def _loads_partial(run_dir: Path, steps: int, reason: str) -> Manifest:
    """The folder loads, says ``partial`` with ``reason``, and holds ``steps`` recorded steps
    of the function (the interrupted one may be there too, cut)."""
    record = _final(run_dir)
    assert (record.status, record.steps_recorded) == ("partial", steps), record
    assert record.error is None and record.ended_by is not None, record
    assert record.ended_by.startswith(reason), record.ended_by
    run = autoprof.load(run_dir)
    assert run.record is not None and run.record.status == "partial"
    called = run.steps()
    assert len(called) >= steps, called
    text = render_summary(run.report())  # the summary says why it ended
    assert "ended-early" in text and reason.split(" (")[0] in " ".join(text.split())
    return record


class Boom(Exception):
    pass


def _failing(name: str, out_dir: Path, fail_at: int, exc: BaseException, **options: object):
    calls = {"n": 0}

    @autoprof.autoprof(name=name, out_dir=str(out_dir), activities=["cpu"], warmup_calls=1,
                       schedule=SCHEDULE, **options)
    def step(x: torch.Tensor) -> torch.Tensor:
        calls["n"] += 1
        y = torch.mm(x, x)
        if calls["n"] == fail_at:
            raise exc
        return y

    return step


@pytest.mark.parametrize("exc", [Boom("the program's own"), KeyboardInterrupt()],
                         ids=["exception", "ctrl_c"])
def test_an_interrupt_in_a_step_of_the_first_window_is_partial(tmp_path: Path,
                                                               exc: BaseException) -> None:
    step = _failing("first", tmp_path, 5, exc)  # call 5: the third recorded step
    x = torch.eye(4)
    for _ in range(4):
        step(x)
    with pytest.raises(type(exc)) as caught:
        step(x)
    assert caught.value is exc  # the very same exception object reaches the program
    assert torch.equal(step(x), x)  # later calls run, unprofiled
    autoprof.flush()
    (run_dir,) = _runs(tmp_path, "first")
    record = _loads_partial(run_dir, 2, type(exc).__name__)
    assert "profiler step 4 (active), after 2 recorded steps" in str(record.ended_by)


@pytest.mark.parametrize("exc", [Boom("the program's own"), KeyboardInterrupt()],
                         ids=["exception", "ctrl_c"])
def test_an_interrupt_in_a_step_of_a_triggered_window_is_partial(tmp_path: Path,
                                                                  exc: BaseException) -> None:
    # the window begins at call 20 (its warm-up call), records calls 22-25; 24 raises
    step = _failing("triggered", tmp_path, 24, exc, watch=dict(at_calls=[20], signal=False))
    x = torch.eye(4)
    for i in range(1, 31):
        if i == 24:
            with pytest.raises(type(exc)) as caught:
                step(x)
            assert caught.value is exc
        else:
            step(x)
    autoprof.flush()
    healthy, triggered = sorted(_runs(tmp_path, "triggered"),
                                key=lambda p: "trigger" in _final(p).extra)
    assert _final(healthy).status == "complete"
    record = _loads_partial(triggered, 2, type(exc).__name__)
    assert record.extra["trigger"]["at_call"] == 20


def test_a_failure_before_any_recorded_step_still_fails_with_the_error(tmp_path: Path) -> None:
    step = _failing("early", tmp_path, 3, Boom("at once"))  # the first recorded step
    x = torch.eye(2)
    for _ in range(2):
        step(x)
    with pytest.raises(Boom):
        step(x)
    autoprof.flush()
    (run_dir,) = _runs(tmp_path, "early")
    record = _final(run_dir)
    assert record.status == "failed" and record.error is not None
    assert str(record.ended_by).startswith("Boom: at once raised by the function")


# -- signals and the program's exit, in a subprocess --------------------------------------

PROGRAM = """
import os, signal, sys, time, torch
import autoprof

out_dir, how = sys.argv[1], sys.argv[2]
watch = dict(at_calls=[20], signal=False) if "triggered" in how else None
stop_at = 24 if "triggered" in how else 5  # the third recorded step of the window
calls = 0
if how.startswith("handler"):
    def own(signum, frame):
        print("OWN HANDLER", flush=True)
        sys.exit(7)
    signal.signal(signal.SIGTERM, own)

@autoprof.autoprof(name="f", out_dir=out_dir, activities=["cpu"], warmup_calls=1,
                   schedule=dict(wait=0, warmup=1, active=4), watch=watch)
def f(x):
    global calls
    calls += 1
    if calls == stop_at and "between" not in how:
        print("IN STEP", flush=True)
        time.sleep(60)
    return x @ x

x = torch.ones(8, 8)
for i in range(40):
    f(x)
    if calls == stop_at and "between" in how:
        if how == "raise-between":
            raise ValueError("the loop's own")
        print("IN STEP", flush=True)
        time.sleep(60)
"""


def _program(out_dir: Path, how: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "AUTOPROF_FINISH_YIELD_S": "0"}
    proc = subprocess.Popen([sys.executable, "-c", PROGRAM, str(out_dir), how], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_default_ctrl_c)
    return proc


def _default_ctrl_c() -> None:
    """The program starts as a terminal's does, Ctrl+C a KeyboardInterrupt: a test run started
    by a shell's `&` (a CI job) would hand it SIGINT ignored, and Python keeps that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _signalled(out_dir: Path, how: str, sig: int) -> tuple[int, str]:
    proc = _program(out_dir, how)
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    assert line == "IN STEP", (line, proc.stderr.read() if proc.stderr else "")
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=90)
    return proc.returncode, out


@pytest.mark.slow
@pytest.mark.parametrize("how", ["first", "triggered"])
def test_sigterm_in_a_step_writes_the_steps_and_still_ends_the_process(
        tmp_path: Path, how: str) -> None:
    code, _ = _signalled(tmp_path, how, signal.SIGTERM)
    assert code == -signal.SIGTERM  # ended by SIGTERM, as its default would
    runs = _runs(tmp_path, "f")
    run_dir = runs[-1] if how == "first" else next(
        p for p in runs if "trigger" in _final(p).extra)
    record = _loads_partial(run_dir, 2, "SIGTERM in profiler step 4 (active)")
    assert list(run_dir.glob("*.pt.trace.json.gz"))
    assert record.ended_by == "SIGTERM in profiler step 4 (active), after 2 recorded steps"


@pytest.mark.slow
def test_sigterm_between_steps_writes_the_steps(tmp_path: Path) -> None:
    code, _ = _signalled(tmp_path, "first-between", signal.SIGTERM)
    assert code == -signal.SIGTERM
    (run_dir,) = _runs(tmp_path, "f")
    _loads_partial(run_dir, 3, "SIGTERM between two steps, after 3 recorded steps")


@pytest.mark.slow
def test_sigterm_calls_the_programs_own_handler_after_the_window_is_written(
        tmp_path: Path) -> None:
    code, out = _signalled(tmp_path, "handler", signal.SIGTERM)
    assert code == 7 and "OWN HANDLER" in out  # the program's handler decided the exit
    (run_dir,) = _runs(tmp_path, "f")
    _loads_partial(run_dir, 2, "SIGTERM in profiler step 4 (active)")


@pytest.mark.slow
def test_ctrl_c_in_a_step_writes_the_steps_and_still_ends_the_process(tmp_path: Path) -> None:
    code, _ = _signalled(tmp_path, "first", signal.SIGINT)
    assert code == -signal.SIGINT  # Python ends an uncaught KeyboardInterrupt by SIGINT
    (run_dir,) = _runs(tmp_path, "f")
    _loads_partial(run_dir, 2, "KeyboardInterrupt raised by the function in profiler step 4")


@pytest.mark.slow
def test_an_exception_outside_the_function_ends_the_window_partial(tmp_path: Path) -> None:
    proc = _program(tmp_path, "raise-between")
    _, err = proc.communicate(timeout=90)
    assert proc.returncode == 1 and "ValueError: the loop's own" in err
    (run_dir,) = _runs(tmp_path, "f")
    _loads_partial(run_dir, 3, "the program ended during the window: ValueError: the "
                               "loop's own raised outside the function")


def test_the_previous_handler_comes_back_when_the_window_ends() -> None:
    from autoprof.record.session import terminate

    def own(signum: int, frame: object) -> None:
        pass

    for before in (signal.SIG_DFL, own):
        signal.signal(signal.SIGTERM, before)
        try:
            assert terminate.install(lambda safe: True)
            assert signal.getsignal(signal.SIGTERM) is not before
            terminate.uninstall()
            assert signal.getsignal(signal.SIGTERM) is before
        finally:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # an ignored SIGTERM is left ignored
    try:
        assert not terminate.install(lambda safe: True)
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def test_only_the_programs_own_frames_are_a_safe_point() -> None:
    from autoprof.record.session import terminate

    assert terminate.safe_frame(sys._getframe())  # a test's frame: nothing of autoprof's
    code = compile("import sys\nframe = sys._getframe()", terminate.__file__, "exec")
    scope: dict[str, object] = {}
    exec(code, scope)  # a frame whose file is autoprof's own, not a caller of the function
    assert not terminate.safe_frame(scope["frame"])  # type: ignore[arg-type]


def test_a_sigterm_in_autoprofs_own_code_ends_the_window_when_its_step_ends(
        tmp_path: Path) -> None:
    from autoprof.record.session import terminate

    got: list[int] = []

    def own(signum: int, frame: object) -> None:
        got.append(signum)

    signal.signal(signal.SIGTERM, own)
    try:
        step = _failing("deferred", tmp_path, 0, Boom())  # never raises
        x = torch.eye(2)
        for _ in range(4):  # a warm-up call, torch's warm-up step, two recorded steps
            step(x)
        scope: dict[str, object] = {}
        exec(compile("import sys\nframe = sys._getframe()", terminate.__file__, "exec"), scope)
        terminate._on_sigterm(signal.SIGTERM, scope["frame"])  # type: ignore[arg-type]
        assert got == [signal.SIGTERM]  # the program's handler at once
        assert not step.autoprof_session.done  # not stopped from inside autoprof's code
        step(x)  # the next step ends: so does the window
        assert step.autoprof_session.done
        assert signal.getsignal(signal.SIGTERM) is own  # the program's handler is back
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    autoprof.flush()
    (run_dir,) = _runs(tmp_path, "deferred")
    _loads_partial(run_dir, 3, "SIGTERM between two steps, after 3 recorded steps")
