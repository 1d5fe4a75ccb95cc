"""The run-folder contract: one atomic write, one temp-name scheme, labels Kineto can write."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autoprof import runfolder as rf


def test_atomic_open_leaves_the_old_file_and_no_temporary_on_error(tmp_path):
    target = tmp_path / "table.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError), rf.atomic_open(target) as fh:
        fh.write(b"half of the new")
        raise RuntimeError("disk gone")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table.txt"]


def test_atomic_write_replaces_with_ordinary_permissions(tmp_path):
    target = tmp_path / "ops.csv"
    rf.atomic_write_text(target, "a,b\n", fsync=False)
    mask = os.umask(0)
    os.umask(mask)
    assert target.read_text() == "a,b\n"
    assert target.stat().st_mode & 0o777 == 0o666 & ~mask


def test_temp_names_differ_within_one_process_and_name_their_pid(tmp_path):
    names = {rf.temp_name(tmp_path / "m.json").name for _ in range(50)}
    assert len(names) == 50
    assert all(n.startswith(".m.json.") and f".{os.getpid()}." in n and n.endswith(".tmp")
               for n in names)


def _gone_pid() -> int:
    """A pid no process has: above pid_max where Linux says it (a reaped child's pid can be
    taken again by the next process the suite starts), else a child that has ended."""
    with contextlib.suppress(OSError, ValueError):
        return int(Path("/proc/sys/kernel/pid_max").read_text()) + 1
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    return gone.pid


def test_stale_temps_are_those_of_processes_that_are_gone(tmp_path):
    gone = _gone_pid()
    assert not rf.pid_alive(gone)
    old_scheme = tmp_path / f".manifest.json.{gone}.tmp"
    new_scheme = rf.temp_name(tmp_path / "ops.csv").with_name(f".ops.csv.{gone}.a1b2c3.tmp")
    live = rf.temp_name(tmp_path / "table.txt")
    other = tmp_path / ".not-ours.tmp"
    for p in (old_scheme, new_scheme, live, other):
        p.write_text("x")
    assert sorted(rf.stale_temps(tmp_path)) == sorted([old_scheme, new_scheme])


def test_a_live_temp_whose_random_part_is_all_digits_is_not_stale(tmp_path):
    """temp_name's random part is 6 hex digits, sometimes decimal ones only (one name in 17):
    it is never read as the pid."""
    live = tmp_path / f".table.txt.{os.getpid()}.859485.tmp"
    gone = tmp_path / f".table.txt.{_gone_pid()}.123456.tmp"
    for p in (live, gone):
        p.write_text("x")
    assert rf.stale_temps(tmp_path) == [gone]


def test_a_zombie_is_not_alive():
    """A finished child nobody has waited for yet (as a killed job's pid can be)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    stat = Path(f"/proc/{child.pid}/stat")
    deadline = time.monotonic() + 30
    while stat.read_bytes().rsplit(b")", 1)[1].split()[0] != b"Z":  # not reaped: a zombie
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert not rf.pid_alive(child.pid)
    child.wait()
    assert not rf.pid_alive(child.pid) and rf.pid_alive(os.getpid())


@pytest.mark.parametrize(("name", "label"), [('a "b"', "a 'b'"), ("c\\d", "c/d"),
                                             ("e\nf", "e f"), ("plain_name", "plain_name")])
def test_kineto_labels_are_valid_json_strings_unescaped(name, label):
    assert rf.kineto_label(name) == label
    assert json.loads(f'"{rf.kineto_label(name)}"') == label  # as Kineto writes it


def test_error_records_are_cut_and_never_raise():
    class Bad(Exception):
        def __str__(self) -> str:
            raise ValueError

    assert rf.error_record(Bad(), "active")["message"].startswith("<str() of the exception")
    long = rf.error_record(ValueError("x" * 10_000), "export")["message"]
    assert len(long) < rf.MAX_ERROR_CHARS + 100 and long.endswith("(10000 characters, cut)")


def test_raw_and_final_trace_names_round_trip():
    final = "rank1.1796116086889329452.pt.trace.json.gz"
    raw = rf.raw_trace_name(final)
    assert raw.startswith(".") and raw.endswith(rf.RAW_SUFFIX)
    assert rf.final_trace_name(raw) == final


def test_a_rank_removes_only_its_own_stale_temporaries():
    from autoprof.record.finisher.folder import _owned

    assert _owned(".rank1.manifest.json.99.abc.tmp", "rank1.", 1)
    assert _owned(".rank1.17.pt.trace.json.gz.99.abc.tmp", "rank1.", 1)
    assert not _owned(".rank2.manifest.json.99.abc.tmp", "rank1.", 1)  # maybe another host's
    assert not _owned(".table.txt.99.abc.tmp", "rank1.", 1)
    assert _owned(".table.txt.99.abc.tmp", "rank0.", 0)
    assert _owned(".anything.99.tmp", "", None)  # one process, one folder
