"""The finisher's pipe from the recording process, and its last record: the calls after the
window.

The recording process writes its run's manifest as one JSON line on the finisher's stdin as
the window ends; the finisher starts on it at once. The program then goes on, and its first
calls after the window are timed (``autoprof.record.session``); their times follow as a
second line, ``{"after_window_call_ms": [...], "after_window_iter_ms": ...}`` (the second key
where the process uses CUDA and the block of calls after them was timed), then EOF (or EOF
alone: the program ended first, or the run ended some other way). The finisher waits for
that line only after its own work, at most ``AFTER_WINDOW_WAIT_S``, and then writes the
times into the manifests it finished, under the folder lock: the recording process never
touches a folder its finisher may hold, and the status and every other key stay as the
finisher wrote them.

Never imports torch.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import sys
import time
from pathlib import Path
from typing import Any

from autoprof import runfolder as rf
from autoprof.runfolder import Manifest

AFTER_WINDOW_WAIT_S = 600.0  # after its own work, how long the finisher waits for the times
_KEY = "after_window_call_ms"
_ITER_KEY = "after_window_iter_ms"  # the block of calls timed back to back, per iteration


class Pipe:
    """Lines of a pipe, each read with an optional deadline (``select`` where the OS has it
    for pipes, else a blocking read)."""

    def __init__(self, stream: Any, read_already: bytes = b"") -> None:
        self._stream = stream
        self._fd: int | None = None
        with contextlib.suppress(AttributeError, OSError, ValueError):
            self._fd = stream.fileno()
        self._buffer = read_already
        self._eof = False

    def line(self, timeout_s: float | None = None) -> bytes | None:
        """The next line (without its newline); None at EOF or after ``timeout_s``."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while b"\n" not in self._buffer and not self._eof:
            if not self._ready(deadline):
                return None
            chunk = self._read()
            self._eof = not chunk
            self._buffer += chunk
        if b"\n" in self._buffer:
            line, self._buffer = self._buffer.split(b"\n", 1)
            return line
        line, self._buffer = self._buffer, b""
        return line or None

    def _ready(self, deadline: float | None) -> bool:
        if deadline is None or self._fd is None:
            return True
        try:
            ready, _, _ = select.select([self._fd], [], [], max(0.0, deadline - time.monotonic()))
        except (OSError, ValueError):  # no select on pipes here: block
            return True
        return bool(ready)

    def _read(self) -> bytes:
        if self._fd is not None:
            return os.read(self._fd, 1 << 16)
        data = self._stream.read()  # a stream without a file descriptor: all of it at once
        return data.encode() if isinstance(data, str) else bytes(data)


def read_handoff(pipe: Pipe) -> Manifest | None:
    """Wait for the recording process: its manifest's line, or EOF when it died first."""
    while (line := pipe.line()) is not None:
        with contextlib.suppress(ValueError):
            return Manifest.from_json(line, "<the manifest handed over on stdin>")
    return None


def after_window_times(line: bytes | None) -> tuple[tuple[float, ...], float | None]:
    """The times in the recording process's last line: each timed call's, and the block's
    time per iteration (none when it sent none)."""
    if line is None:
        return (), None
    with contextlib.suppress(ValueError):
        data = json.loads(line)
        if isinstance(data, dict):
            return rf.finite_numbers(data.get(_KEY)), rf.positive_number(data.get(_ITER_KEY))
    return (), None


def record_after_window(run_dir: Path, handoff: Manifest, pipe: Pipe,
                        wait_s: float = AFTER_WINDOW_WAIT_S) -> tuple[float, ...]:
    """Wait (at most ``wait_s``) for the times of the calls after the window, then write them
    into this run's finished manifests (this rank's, and rank 0's merged one); the times
    written (none when none came, or when they could not be written: the run is finished
    without them, and the reason goes to the finisher's log). Never raises: the run's status
    was decided before."""
    times, iter_ms = after_window_times(pipe.line(wait_s))
    if not times:
        return ()
    rank = handoff.rank if handoff.world_size > 1 else None
    names = [rf.manifest_name(rank)] + ([rf.MANIFEST] if rank == 0 else [])
    try:
        with rf.folder_lock(run_dir, rf.lock_wait_s()):
            for name in names:
                _add_times(run_dir / name, handoff.run_id, times, iter_ms)
    except OSError as exc:  # a lock held too long, a full disk
        print(f"autoprof.finish: the calls after the window were not recorded: {exc}",
              file=sys.stderr)
        return ()
    return times


def _add_times(path: Path, run_id: str | None, times: tuple[float, ...],
               iter_ms: float | None) -> None:
    """The manifest at ``path``, with the times, when it is this run's finished record."""
    try:
        manifest = rf.read_manifest(path, rf.MAX_MANIFEST_BYTES)
    except rf.ManifestError:
        return
    if manifest.is_final and manifest.run_id == run_id:
        rf.write_manifest(path, manifest.replace(after_window_call_ms=times,
                                                 after_window_iter_ms=iter_ms))
