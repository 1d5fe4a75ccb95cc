"""``autoprof.check`` on a full disk: falsy, says nothing usable was written, and leaves no
empty folder behind (never a truthy path with "run written to")."""

from __future__ import annotations

import errno
import os
import resource
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SMALL = {"warmup_calls": 1, "schedule": {"wait": 0, "warmup": 0, "active": 1}}


def _square(x: object) -> object:
    return x @ x  # type: ignore[operator]


def _check(out_dir: Path) -> tuple[object, list[str]]:
    import torch

    import autoprof

    fn = autoprof.autoprof(name="disk", out_dir=str(out_dir), **SMALL)(_square)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = autoprof.check(fn, torch.ones(4, 4))
    return result, [str(w.message) for w in caught]


def _full(*args: object, **kwargs: object) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


def test_no_room_for_the_manifest_is_falsy_and_leaves_no_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from autoprof.record.session import writer

    monkeypatch.setattr(writer, "write_manifest", _full)
    out_dir = tmp_path / "traces-full"
    result, said = _check(out_dir)
    assert not result and "no run folder was written" in repr(result)
    assert not out_dir.exists()  # the out_dir, name and run folders it made are gone
    assert any("nothing was written" in s and "No space left" in s for s in said), said
    assert not any("run written to" in s for s in said)


def test_an_out_dir_that_was_there_stays(tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from autoprof.record.session import writer

    monkeypatch.setattr(writer, "write_manifest", _full)
    result, _ = _check(tmp_path)
    assert not result and tmp_path.is_dir() and list(tmp_path.iterdir()) == []


def test_no_room_for_the_trace_is_falsy_with_the_reason(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from autoprof.record import export

    monkeypatch.setattr(export, "export_raw_trace", _full)
    result, said = _check(tmp_path)
    assert not result and "no usable run was written" in repr(result)
    assert "No space left" in repr(result)
    assert not any("run written to" in s for s in said), said


def _file_size_limit() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))  # EFBIG past 1 KiB


@pytest.mark.slow
def test_check_under_a_file_size_limit_says_nothing_was_written(tmp_path: Path) -> None:
    code = ("import sys, torch, autoprof\n"
            "r = autoprof.check(lambda x: x @ x, torch.ones(4, 4))\n"
            "print('RESULT', bool(r), repr(r))\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "AUTOPROF_DIR": str(tmp_path / "t")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=env, cwd=REPO, preexec_fn=_file_size_limit)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "RESULT False" in done.stdout, done.stdout + done.stderr[-3000:]
    assert "run written to" not in done.stderr
    # whatever was made is either gone or holds a manifest saying why (never empty)
    for folder in (tmp_path / "t").rglob("*"):
        assert not folder.is_dir() or any(folder.iterdir()), folder
