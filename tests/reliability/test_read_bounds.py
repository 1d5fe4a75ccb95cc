"""No file a reader opens can stall it or fill memory: a FIFO where a trace, a source-lines
trace, a whatif.json or a manifest should be is refused with one line and never opened for a
blocking read (also through a ``file://`` URL), and gzip data that expands past 200 times
its size (``AUTOPROF_MAX_GZIP_RATIO``) fails fast, after inflating 64 MiB, not gigabytes."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
import time
import tracemalloc
import warnings
from pathlib import Path

import pytest

from autoprof.analysis import TraceError, load
from autoprof.analysis.loader.source import RATIO_FLOOR_BYTES
from autoprof.analysis.metrics.lines.trace import read_lines_file

REPO = Path(__file__).resolve().parents[2]
LINES_RUN = REPO / "tests/data/gpu_h200_lines/runs/on/slow_op/20261204-010312-7173a1"
LINES_FILE = "lines.vm_711.json.gz"
TRACE_FILE = "vm_711.1796346192635571077.pt.trace.json.gz"
TIMEOUT_S = 90  # a blocked open() would wait for ever; the whole command takes seconds

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs (POSIX)")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "AUTOPROF_CACHE": "0"}
    return subprocess.run([sys.executable, "-m", "autoprof", *args], capture_output=True,
                          text=True, timeout=TIMEOUT_S, env=env, cwd=REPO)


@pytest.fixture()
def run(tmp_path: Path) -> Path:
    return Path(shutil.copytree(LINES_RUN, tmp_path / "slow" / "run"))


def _fifo_in_place_of(path: Path) -> None:
    if path.exists():
        path.unlink()
    os.mkfifo(path)


@pytest.mark.parametrize("name", [LINES_FILE, "whatif.json"])
def test_a_fifo_beside_the_traces_is_skipped_with_one_line(run: Path, name: str) -> None:
    """A FIFO as the lines trace or the what-if record: the summary is printed (its traces
    are fine) and one warning names the FIFO."""
    _fifo_in_place_of(run / name)
    done = _cli("summary", str(run))
    assert done.returncode == 0, done.stderr[-2000:]
    refused = [line for line in done.stderr.splitlines() if "is a FIFO" in line]
    assert len(refused) == 1 and name in refused[0], done.stderr[-2000:]
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("name", [TRACE_FILE, "manifest.json"])
@pytest.mark.parametrize("route", ["path", "file_url"])
def test_a_fifo_as_trace_or_manifest_is_one_line_on_every_route(
        run: Path, name: str, route: str) -> None:
    _fifo_in_place_of(run / name)
    done = _cli("summary", str(run) if route == "path" else f"file://{run}")
    assert done.returncode == 2, done.stdout[-500:] + done.stderr[-2000:]
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr[-2000:]
    assert "FIFO" in done.stderr and name in done.stderr


def test_a_fifo_named_by_a_file_url_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "w.1.pt.trace.json"
    os.mkfifo(fifo)
    done = _cli("summary", f"file://{fifo}")
    assert done.returncode == 2 and "is a FIFO" in done.stderr, done.stderr[-2000:]


# -- gzip bombs ------------------------------------------------------------------------------

BOMB_MEMBER_BYTES = 16 * 1024**2
BOMB_MEMBERS = 192  # 3 GiB of spaces from about 3 MB of gzip


def _bomb(path: Path) -> Path:
    member = gzip.compress(b" " * BOMB_MEMBER_BYTES, compresslevel=9)
    with open(path, "wb") as f:
        for _ in range(BOMB_MEMBERS):
            f.write(member)
    assert path.stat().st_size < 4 * 1024**2
    return path


def test_a_gzip_bomb_lines_trace_fails_fast_in_little_memory(tmp_path: Path) -> None:
    bomb = _bomb(tmp_path / LINES_FILE)
    tracemalloc.start()
    started = time.monotonic()
    try:
        with pytest.raises(TraceError, match="expands more than 200 times") as raised:
            read_lines_file(bomb, tmp_path)
        _, peak_bytes = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.monotonic() - started < 30
    assert peak_bytes < 4 * RATIO_FLOOR_BYTES, f"{peak_bytes / 1024**2:.0f} MiB"
    assert str(raised.value).startswith(str(bomb))


def test_a_gzip_bomb_lines_trace_leaves_the_run_readable(run: Path) -> None:
    _bomb(run / LINES_FILE)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = load(run)
        assert not loaded.analysis.source_lines.available
    assert any("expands more than" in str(w.message) for w in caught)
    assert len(loaded.steps()) > 0


def test_a_gzip_bomb_trace_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="expands more than 200 times"):
        load(_bomb(tmp_path / "w.1.pt.trace.json.gz"))


def test_the_ratio_can_be_raised_for_a_real_trace(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Above the ratio the bound is the size cap alone: the same bomb, with the ratio raised
    and the size cap at 128 MiB, fails on the size instead."""
    monkeypatch.setenv("AUTOPROF_MAX_GZIP_RATIO", "5000")
    monkeypatch.setenv("AUTOPROF_MAX_TRACE_BYTES", str(2 * RATIO_FLOOR_BYTES))
    with pytest.raises(TraceError, match="decompressed size exceeds"):
        read_lines_file(_bomb(tmp_path / LINES_FILE), tmp_path)


def test_the_viewer_never_opens_a_fifo_named_as_source(tmp_path: Path) -> None:
    """The Source page shows the file a lines trace names, which may be anything: a FIFO is
    not shown (None), at once; on failure the FIFO's writer end releases the stuck reader."""
    pytest.importorskip("streamlit")
    import threading

    from autoprof.viewer.views.source import _code

    fifo = tmp_path / "model.py"
    os.mkfifo(fifo)
    got: list[object] = []
    reader = threading.Thread(target=lambda: got.append(_code(str(fifo))), daemon=True)
    reader.start()
    reader.join(timeout=10)
    if reader.is_alive():  # blocked in open(): unblock it, then fail
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(timeout=10)
    assert got == [None]
    (tmp_path / "ok.py").write_text("x = 1\n")
    assert _code(str(tmp_path / "ok.py")) == ["x = 1"]
