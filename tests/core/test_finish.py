"""The finisher: a run is finished by its own process, whatever happens to the program."""

from __future__ import annotations

import gzip
import json
import os
import resource
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pytest
import torch

import autoprof
import autoprof.record.export as export
import autoprof.record.finisher.folder as finish
from autoprof import AutoprofWarning
from autoprof import runfolder as rf
from tests.core.conftest import TINY, manifest, only_run, trace_files

REPO = Path(__file__).resolve().parents[2]


def _env(traces: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "AUTOPROF_DIR": str(traces), "PYTHONPATH": str(REPO), **extra}


def _wait_final(run: Path, timeout_s: float = 120.0) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            m = manifest(run)
        except (OSError, ValueError):
            m = {"status": "recording"}
        if m["status"] != "recording" or time.monotonic() > deadline:
            return m
        time.sleep(0.05)


def _valid_traces(run: Path) -> list[dict]:
    traces = [json.loads(gzip.decompress(p.read_bytes())) for p in trace_files(run)]
    assert traces and all(isinstance(t["traceEvents"], list) for t in traces)
    return traces


def _hidden(run: Path) -> list[str]:
    return sorted(p.name for p in run.iterdir() if p.name.startswith("."))


def _handed_over_run(monkeypatch, traces_root: Path, name: str, ops: int = 1) -> Path:
    """A run whose finisher could not start: 'recording', raw trace on disk, handed over."""
    monkeypatch.setattr(export, "FINISHER_MODULE", "autoprof_no_such_finisher")

    @autoprof.autoprof(name=name, warmup=0, schedule=TINY)
    def f(x):
        for _ in range(ops):
            x = x + 1
        return x

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f(torch.ones(2))
        f(torch.ones(2))
        f.autoprof_session.flush()
    monkeypatch.undo()
    run = only_run(traces_root, name)
    assert manifest(run)["status"] == "recording"
    return run


RECORD = textwrap.dedent(
    """
    import sys, time, torch
    from autoprof import autoprof

    @autoprof(name="job", warmup=0, schedule=dict(wait=0, warmup=1, active=2, repeat=REPEAT))
    def step(x):
        return (x @ x).relu()

    x = torch.randn(32, 32)
    for _ in range(CALLS):
        step(x)
    print("WINDOW DONE", flush=True)
    time.sleep(SLEEP)
    """
)


def _start(tmp_path: Path, traces: Path, calls: int = 3, repeat: int = 1, sleep: int = 120,
           **popen) -> subprocess.Popen[str]:
    script = tmp_path / "job.py"
    script.write_text(RECORD.replace("REPEAT", str(repeat)).replace("CALLS", str(calls))
                      .replace("SLEEP", str(sleep)))
    proc = subprocess.Popen([sys.executable, str(script)], env=_env(traces),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert "WINDOW DONE" in line, proc.stderr.read() if proc.stderr else line
    return proc


def test_recording_process_never_imports_pandas_pyarrow_msgspec(tmp_path, traces_root):
    script = tmp_path / "clean.py"
    script.write_text(textwrap.dedent(
        """
        import sys, torch, autoprof
        from autoprof import autoprof as ap

        @ap(name="clean", warmup=1, schedule=dict(wait=1, warmup=1, active=2))
        def f(x):
            return x * 2

        for _ in range(6):
            f(torch.ones(4))
        autoprof.flush()
        print(sorted(m for m in ("pandas", "pyarrow", "msgspec") if m in sys.modules))
        """))
    out = subprocess.run([sys.executable, str(script)], env=_env(traces_root),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    run = only_run(traces_root, "clean")
    assert manifest(run)["status"] == "complete"
    assert (run / "ops.csv").exists()  # the finisher did import them, in its own process


def test_the_finisher_never_imports_torch(monkeypatch, traces_root):
    run = _handed_over_run(monkeypatch, traces_root, "notorch")
    code = ("import sys; from autoprof.record.finisher.folder import main; main([sys.argv[1]]); "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(run)], env=_env(traces_root),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "False"
    assert manifest(run)["status"] == "complete" and (run / "table.txt").exists()


def test_sigkill_right_after_the_window_gives_a_complete_run(tmp_path, traces_root):
    proc = _start(tmp_path, traces_root)
    proc.kill()
    proc.wait(30)
    run = only_run(traces_root, "job")
    m = _wait_final(run)
    assert m["status"] == "complete" and m["error"] is None
    assert m["steps_recorded"] == 2
    lines = set(rf.lines_files(run, ""))  # the source-lines trace of the first warm-up step
    assert {p.name for p in trace_files(run)} | {"table.txt", "ops.csv"} | lines == set(m["files"])
    _valid_traces(run)
    assert _hidden(run) == []


def test_sigkill_after_one_of_two_cycles_keeps_the_whole_cycle(tmp_path, traces_root):
    proc = _start(tmp_path, traces_root, calls=4, repeat=2)  # first cycle exported, not ended
    proc.kill()
    proc.wait(30)
    run = only_run(traces_root, "job")
    m = _wait_final(run)
    assert m["status"] == "partial" and m["steps_recorded"] == 2
    assert "ended before handing over" in m["ended_by"]
    assert len(_valid_traces(run)) == 1
    assert _hidden(run) == []


def _default_ctrl_c() -> None:
    """A job started by a shell's `&` inherits SIGINT ignored; a terminal's job does not."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_of_the_job_does_not_reach_the_finisher(tmp_path, traces_root):
    proc = _start(tmp_path, traces_root, start_new_session=True, preexec_fn=_default_ctrl_c)
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl+C: the whole foreground process group
    time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)  # a second one, while exit waits for the finisher
    proc.wait(60)
    run = only_run(traces_root, "job")
    m = _wait_final(run)
    assert m["status"] == "complete"
    _valid_traces(run)


def test_finisher_twice_and_two_at_once_leave_one_correct_folder(monkeypatch, traces_root):
    run = _handed_over_run(monkeypatch, traces_root, "twice")
    argv = [sys.executable, "-m", "autoprof.finish", str(run)]
    both = [subprocess.Popen(argv, env=_env(traces_root), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in both]
    assert [p.returncode for p in both] == [0, 0], outs
    said = sorted(out.strip().rsplit(": ", 1)[1] for out, _ in outs)
    assert said == ["complete", "nothing to do (finished, or still recording)"]
    m = manifest(run)
    assert m["status"] == "complete" and "requested_status" not in m
    assert sorted(p.name for p in run.iterdir()) == sorted(["manifest.json", *m["files"]])
    _valid_traces(run)
    before = {p.name: p.stat().st_mtime_ns for p in run.iterdir()}
    again = subprocess.run(argv, env=_env(traces_root), capture_output=True, text=True,
                           timeout=120)
    assert again.returncode == 0 and "nothing to do" in again.stdout
    assert {p.name: p.stat().st_mtime_ns for p in run.iterdir()} == before


def test_disk_full_finisher_marks_the_run_failed_with_the_error(monkeypatch, traces_root):
    run = _handed_over_run(monkeypatch, traces_root, "full", ops=400)
    (raw,) = [p for p in run.iterdir() if p.name.endswith(".raw")]
    assert len(gzip.compress(raw.read_bytes(), 1)) > 16 * 1024

    def small_files() -> None:  # works as root too, unlike a read-only folder
        resource.setrlimit(resource.RLIMIT_FSIZE, (16 * 1024, 16 * 1024))

    out = subprocess.run([sys.executable, "-m", "autoprof.finish", str(run)],
                         env=_env(traces_root), capture_output=True, text=True, timeout=120,
                         preexec_fn=small_files)
    assert out.returncode == 0, out.stderr
    m = manifest(run)
    assert m["status"] == "failed"
    assert m["error"]["type"] == "OSError" and "File too large" in m["error"]["message"]
    assert m["files"] == [] and _hidden(run) == [raw.name]  # the only copy is kept
    assert m["retry"]["raw"] == [raw.name] and "run `python -m" in m["error"]["message"]
    assert finish.main([str(run)]) == 0  # with room again, finishing again completes it
    m = manifest(run)
    assert m["status"] == "complete" and m["error"] is None and "retry" not in m
    assert _hidden(run) == [] and m["files"]


def test_a_finisher_that_cannot_start_gives_one_warning_not_a_hang(monkeypatch, traces_root):
    monkeypatch.setattr(export, "FINISHER_MODULE", "autoprof_no_such_finisher")
    fn = autoprof.autoprof(name="nofinisher", warmup=0, schedule=TINY)(lambda x: x + 1)
    t0 = time.monotonic()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn(torch.ones(2))
        fn(torch.ones(2))
        fn.autoprof_session.flush()
    assert time.monotonic() - t0 < 20
    mine = [w for w in caught if issubclass(w.category, AutoprofWarning)]
    assert len(mine) == 1, [str(w.message) for w in mine]
    text = str(mine[0].message)
    assert "No module named autoprof_no_such_finisher" in text
    assert "python -m autoprof.finish" in text
    run = only_run(traces_root, "nofinisher")
    assert manifest(run)["requested_status"] == "complete"
    assert finish.main([str(run)]) == 0  # the command the warning names finishes it
    assert manifest(run)["status"] == "complete"
    _valid_traces(run)
    assert _hidden(run) == []


def test_autoprof_off_in_the_finishers_environment_still_finishes(monkeypatch, traces_root):
    fn = autoprof.autoprof(name="offlater", warmup=0, schedule=TINY)(lambda x: x + 1)
    monkeypatch.setenv("AUTOPROF", "0")  # decorated before: recording goes on
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn(torch.ones(2))
        fn(torch.ones(2))
        fn.autoprof_session.flush()
    assert not [w for w in caught if issubclass(w.category, AutoprofWarning)]
    assert manifest(only_run(traces_root, "offlater"))["status"] == "complete"


def test_a_slow_finisher_bounds_the_wait_with_one_warning(monkeypatch, tmp_path, traces_root):
    (tmp_path / "slow_finisher.py").write_text("import time\ntime.sleep(30)\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("AUTOPROF_FINISH_TIMEOUT_S", "0.5")
    monkeypatch.setattr(export, "FINISHER_MODULE", "slow_finisher")
    fn = autoprof.autoprof(name="slow", warmup=0, schedule=TINY)(lambda x: x + 1)
    t0 = time.monotonic()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn(torch.ones(2))
        fn(torch.ones(2))
        fn.autoprof_session.flush()
    assert time.monotonic() - t0 < 10
    mine = [str(w.message) for w in caught if issubclass(w.category, AutoprofWarning)]
    assert len(mine) == 1 and "still being finished" in mine[0]
    proc = fn.autoprof_session._finisher.proc
    proc.kill()  # the finisher dies: the next flush says how to finish the run
    proc.wait()
    with pytest.warns(AutoprofWarning, match="failed .exit status -9.*python -m autoprof.finish"):
        fn.autoprof_session.flush()
    assert manifest(fn.autoprof_session.run_dir)["requested_status"] == "complete"


def test_a_live_recording_folder_is_left_alone(traces_root):
    fn = autoprof.autoprof(name="live", warmup=0, schedule=dict(wait=0, warmup=1, active=3))(
        lambda x: x + 1)
    fn(torch.ones(2))  # recording: this process is alive and has not handed the run over
    fn(torch.ones(2))
    run = fn.autoprof_session.run_dir
    assert finish.main([str(run)]) == 0
    assert manifest(run)["status"] == "recording"
    fn.autoprof_session.flush()
    assert manifest(run)["status"] == "partial" and manifest(run)["steps_recorded"] == 1


def test_stale_temporary_files_are_removed(monkeypatch, traces_root):
    run = _handed_over_run(monkeypatch, traces_root, "stale")
    dead = subprocess.run([sys.executable, "-c", "pass"])  # a pid that is gone now
    assert dead.returncode == 0
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    leftover = run / f".ops.csv.{done.pid}.abc123.tmp"
    leftover.write_text("half")
    mine = run / f".table.txt.{os.getpid()}.def456.tmp"  # a live process's: not touched
    mine.write_text("in progress")
    finish.finish_folder(run)
    assert not leftover.exists() and mine.exists()
    mine.unlink()


def test_not_a_run_folder_is_one_clear_line(tmp_path, capsys):
    assert finish.main([str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip()
    assert err == f"autoprof.finish: {tmp_path}: no manifest.json (not an autoprof run folder)"


@pytest.mark.parametrize("name", ['say "hi"', "back\\slash", "tab\there"])
def test_a_run_name_kineto_would_not_escape_still_gives_valid_json(name, traces_root):
    fn = autoprof.autoprof(name=name, warmup=0, schedule=TINY)(lambda x: x * 3)
    fn(torch.ones(2))
    fn(torch.ones(2))
    fn.autoprof_session.flush()
    run = fn.autoprof_session.run_dir
    assert manifest(run)["status"] == "complete" and manifest(run)["name"] == name
    (trace,) = _valid_traces(run)
    labels = {e.get("name") for e in trace["traceEvents"]}
    assert autoprof.runfolder.kineto_label(name) in labels


def test_autoprof_summary_finishes_a_run_left_recording(monkeypatch, traces_root):
    run = _handed_over_run(monkeypatch, traces_root, "leftover")
    out = subprocess.run([sys.executable, "-m", "autoprof", "summary", str(run)],
                         env=_env(traces_root), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert f"{run} was left recording; finished it: complete" in out.stderr
    assert manifest(run)["status"] == "complete"
    again = subprocess.run([sys.executable, "-m", "autoprof", "summary", str(run)],
                           env=_env(traces_root), capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and "left recording" not in again.stderr
    assert again.stdout == out.stdout


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_does_not_hold_the_finisher_back(traces_root):
    """The finisher waits for the end of its pipe: a forked child must not keep it open."""
    fn = autoprof.autoprof(name="forks", warmup=0, schedule=dict(wait=0, warmup=1, active=2))(
        lambda x: x + 1)
    fn(torch.ones(2))  # recording: the finisher and its pipe exist
    pid = os.fork()
    if pid == 0:  # the child outlives the run by far, then leaves without cleanup
        time.sleep(20)
        os._exit(0)
    try:
        fn(torch.ones(2))
        fn(torch.ones(2))
        t0 = time.monotonic()
        fn.autoprof_session.flush()
        assert time.monotonic() - t0 < 15
        assert manifest(fn.autoprof_session.run_dir)["status"] == "complete"
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
