"""Faults: the user's errors pass through unchanged, export failures only warn, nothing is lost."""

from __future__ import annotations

import errno
import shutil
import warnings

import pytest
import torch
from support.readonly import read_only

from autoprof import autoprof
from autoprof.record.warn import AutoprofWarning
from tests.core.conftest import event_names, manifest, only_run, trace_files

SCHEDULE = dict(wait=1, warmup=1, active=2, repeat=1)  # after 1 untraced warm-up call


class Boom(Exception):
    pass


def _failing(fail_at: int, exc: BaseException):
    calls = {"n": 0}

    @autoprof(name="faulty", warmup=1, schedule=SCHEDULE)
    def step(x):
        calls["n"] += 1
        y = torch.mm(x, x)
        if calls["n"] == fail_at + 1:
            raise exc
        return y

    return step


@pytest.mark.parametrize(
    "fail_at, phase",
    # one warm-up step: no lines step (torch's profiler keeps its only warm-up step)
    [(0, "warmup"), (1, "wait"), (2, "profiler_warmup"), (3, "active"), (4, "last_active")],
)
def test_error_in_every_phase(fail_at, phase, traces_root):
    err = Boom(f"broken at call {fail_at}")
    step = _failing(fail_at, err)
    x = torch.eye(3)
    for _ in range(fail_at):
        assert torch.equal(step(x), x)
    with pytest.raises(Boom) as caught:
        step(x)
    assert caught.value is err  # the very same exception object
    assert not torch.autograd._profiler_enabled()
    assert step.autoprof_session.done
    for _ in range(3):  # later calls still work, unprofiled
        assert torch.equal(step(x), x)
    step.autoprof_session.flush()
    run = only_run(traces_root, "faulty")
    m = manifest(run)
    traces = trace_files(run)
    if phase == "last_active":  # after a recorded step: partial, the steps before it kept
        assert (m["status"], m["error"], m["steps_recorded"]) == ("partial", None, 1)
        assert m["ended_by"].startswith(f"Boom: broken at call {fail_at} raised by the "
                                         "function in profiler step 4 (last_active)")
    else:  # no step recorded yet: nothing to read, the run fails with the error
        assert m["status"] == "failed" and m["ended_by"].startswith("Boom")
        assert m["error"] == {"type": "Boom", "message": f"broken at call {fail_at}",
                              "phase": phase}
    if phase in ("active", "last_active"):  # what was recorded is exported
        assert len(traces) == 1 and set(m["files"]) >= {traces[0].name}
        assert "faulty" in event_names(traces[0])
    else:
        assert traces == []


def test_keyboard_interrupt_in_an_active_step(traces_root):
    step = _failing(3, KeyboardInterrupt())
    x = torch.eye(2)
    for _ in range(3):
        step(x)
    with pytest.raises(KeyboardInterrupt):
        step(x)
    assert not torch.autograd._profiler_enabled()
    step.autoprof_session.flush()
    m = manifest(only_run(traces_root, "faulty"))
    assert m["status"] == "failed" and m["error"]["type"] == "KeyboardInterrupt"
    assert m["error"]["phase"] == "active"


def _run_tiny(name: str, out_dir=None):
    @autoprof(name=name, warmup=0, schedule=dict(wait=0, warmup=1, active=1), out_dir=out_dir)
    def f(x):
        return x + 1

    results = [f(torch.tensor(float(i))).item() for i in range(4)]
    f.autoprof_session.flush()
    return results, f.autoprof_session


def _autoprof_warnings(caught):
    return [w for w in caught if issubclass(w.category, AutoprofWarning)]


def test_export_fails_disk_full_one_warning(monkeypatch, traces_root):
    import autoprof.record.export as export

    def full(prof, run_dir, worker):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(export, "export_raw_trace", full)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results, session = _run_tiny("diskfull")
    assert results == [1.0, 2.0, 3.0, 4.0]
    mine = _autoprof_warnings(caught)
    assert len(mine) == 1
    assert str(session.run_dir) in str(mine[0].message)
    assert "No space left on device" in str(mine[0].message)
    m = manifest(session.run_dir)
    assert m["status"] == "failed"
    assert m["error"]["phase"] == "export" and "No space" in m["error"]["message"]


def test_every_write_fails_disk_full_one_warning(monkeypatch, traces_root):
    import autoprof.runfolder.files as artifacts

    def full(path, data):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(artifacts, "atomic_write_bytes", full)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results, session = _run_tiny("nospace")
    assert results == [1.0, 2.0, 3.0, 4.0]
    mine = _autoprof_warnings(caught)
    assert len(mine) == 1
    assert "No space left on device" in str(mine[0].message)
    assert str(traces_root / "nospace") in str(mine[0].message)
    assert not torch.autograd._profiler_enabled()


def test_unwritable_out_dir_one_warning(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results, session = _run_tiny("blocked", out_dir=blocker / "traces")
    assert results == [1.0, 2.0, 3.0, 4.0]
    mine = _autoprof_warnings(caught)
    assert len(mine) == 1
    assert str(blocker / "traces") in str(mine[0].message)
    assert "NotADirectoryError" in str(mine[0].message) or "FileExistsError" in str(
        mine[0].message
    )
    assert session.done and session.run_dir is None


def test_read_only_out_dir_one_warning(tmp_path, monkeypatch):
    ro = tmp_path / "ro"
    ro.mkdir()
    read_only(monkeypatch, ro)
    with pytest.raises(PermissionError):  # what the session meets, as root too
        (ro / "probe").mkdir()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results, _ = _run_tiny("readonly", out_dir=ro)
    assert results == [1.0, 2.0, 3.0, 4.0]
    mine = _autoprof_warnings(caught)
    assert len(mine) == 1 and str(ro) in str(mine[0].message)


def test_read_only_run_folder_after_start_one_warning(monkeypatch, traces_root):
    """Simulates a folder that turns read-only mid-run (root ignores chmod, so patch open)."""
    import autoprof.record.export as export

    def read_only(prof, run_dir, worker):
        raise PermissionError(errno.EACCES, "Permission denied", str(run_dir))

    monkeypatch.setattr(export, "export_raw_trace", read_only)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results, session = _run_tiny("ro-mid")
    assert results == [1.0, 2.0, 3.0, 4.0]
    mine = _autoprof_warnings(caught)
    assert len(mine) == 1 and "Permission denied" in str(mine[0].message)


def test_run_folder_removed_mid_run_one_warning(traces_root):
    @autoprof(name="vanish", warmup=0, schedule=dict(wait=0, warmup=1, active=1))
    def f(x):
        return x * 3

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert f(2) == 6  # profiler started, run folder exists
        shutil.rmtree(f.autoprof_session.run_dir)
        assert [f(i) for i in range(3)] == [0, 3, 6]
        f.autoprof_session.flush()
    mine = _autoprof_warnings(caught)
    assert len(mine) == 1
    assert str(f.autoprof_session.run_dir) in str(mine[0].message)
    assert not torch.autograd._profiler_enabled()
