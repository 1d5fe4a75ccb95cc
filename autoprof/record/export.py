"""Getting a finished profile onto disk without stalling the user's program.

Only what needs the live profiler runs in the user's process: torch's stop and Kineto's
export of each cycle into a hidden plain file (``.<trace>.raw``). Everything else
(compression, the check that the trace parses, ``table.txt``/``ops.csv``, the final manifest)
is done by the run's finisher, ``python -m autoprof.finish --watch RUN_DIR``: a separate
process started when the run opens, in its own session (a Ctrl+C of the job does not reach
it), at the lowest CPU priority (:func:`yield_cpu`), without torch. It waits on a pipe; the
end of the run hands it the manifest (the times of the first calls after the window follow
on a second line), and if the program dies first the pipe's EOF tells it to finish what is
on disk. So the user's process never imports pandas, pyarrow or msgspec
because of recording.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from autoprof import env
from autoprof import runfolder as rf

if TYPE_CHECKING:
    from autoprof.runfolder import Manifest

# the entry point, which waits for an idle core before it loads the finisher's code
FINISHER_MODULE = "autoprof.finish"
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # the folder holding autoprof/

_finishers: list[Finisher] = []  # open pipes a forked child must close
_finishers_lock = threading.Lock()


def trace_paths_for(run_dir: Path, worker: str) -> tuple[Path, Path]:
    """(hidden plain-JSON file the profiler writes, final gzipped name) for one schedule
    cycle, named as ``torch.profiler.tensorboard_trace_handler`` names its files."""
    final = run_dir / f"{worker}.{time.time_ns()}{rf.TRACE_SUFFIX}"
    return final.with_name(rf.raw_trace_name(final.name)), final


def export_raw_trace(prof: Any, run_dir: Path, worker: str) -> tuple[Path, Path]:
    """Blocking part: the profiler writes its cycle to the hidden plain file (by path, so
    into a private folder first: ``runfolder.write_through``, never at a guessable name)."""
    raw, final = trace_paths_for(run_dir, worker)

    def export(path: Path) -> None:
        prof.export_chrome_trace(str(path))
        if not path.exists():  # Kineto reports a failed write on stderr only, and returns
            raise OSError(f"torch.profiler wrote no trace file {raw} (its log on stderr "
                          "says why)")

    rf.write_through(raw, export)
    return raw, final


IDLE_NICE = 19  # the lowest nice value


def yield_cpu(pid: int) -> str:
    """Make process ``pid`` (the finisher, just started) the last to get a busy core: nice
    19, set from the starting side, on the child's pid, so no ``preexec_fn`` runs between
    fork and exec in a threaded program. The finisher makes itself ``SCHED_IDLE`` once it
    starts its work (``cpu_gate.work_at_idle_priority``): while it waits, its short wake-ups
    at nice 19 cost the program less than at ``SCHED_IDLE`` (on 2 busy cores a
    ``SCHED_IDLE`` waiter stalled the program's first calls after the window by 12-22 ms in
    a third of the trials, a nice 19 one in none). Returns what was set ("" when it could
    not be)."""
    try:
        os.setpriority(os.PRIO_PROCESS, pid, IDLE_NICE)
        return f"nice {IDLE_NICE}"
    except (OSError, AttributeError):
        return ""


def _installed() -> bool:
    """Is autoprof imported from site-packages (where ``python -m`` finds it anyway)? Putting
    site-packages first on PYTHONPATH could let a backport shadow a standard module."""
    import site

    roots = [*site.getsitepackages(), site.getusersitepackages()]
    return any(os.path.realpath(r) == os.path.realpath(_PACKAGE_ROOT) for r in roots)


class Finisher:
    """The user-process side of one run's finisher process."""

    def __init__(self, proc: subprocess.Popen[bytes], log: Path, run_dir: Path) -> None:
        self.proc = proc
        self.log = log
        self.run_dir = run_dir
        self._pid = os.getpid()
        self._stdin: IO[bytes] | None = proc.stdin

    @classmethod
    def start(cls, run_dir: Path, rank: int | None) -> Finisher:
        """Start the finisher of ``run_dir``; raises OSError when it cannot be started."""
        log = run_dir / rf.FINISH_LOG
        argv = [sys.executable, "-m", FINISHER_MODULE, "--watch", "--recorder",
                str(os.getpid()), "--rank-timeout", str(env.dist_finish_timeout_s())]
        if rank is not None:
            argv += ["--rank", str(rank)]
        argv.append(str(run_dir))
        child_env = dict(os.environ)
        if not _installed():  # a source tree: the finisher must import this same autoprof
            path = child_env.get("PYTHONPATH")
            child_env["PYTHONPATH"] = _PACKAGE_ROOT + (os.pathsep + path if path else "")
        with rf.open_fresh(log) as err:  # never through a link planted at the name
            proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err,
                env=child_env, start_new_session=True, close_fds=True,
            )
        yield_cpu(proc.pid)
        finisher = cls(proc, log, run_dir)
        with _finishers_lock:
            _finishers.append(finisher)
        return finisher

    def hand_over(self, manifest: Manifest) -> str | None:
        """Give the finisher the run's manifest (one JSON line), which it starts on; the
        pipe stays open for :meth:`close`. None, or why it failed."""
        stdin = self._stdin
        if stdin is None or os.getpid() != self._pid:
            return None
        try:
            stdin.write(json.dumps(manifest.to_dict(), default=str).encode() + b"\n")
            stdin.flush()
        except OSError:
            self.close()  # the finisher is gone: died() says why
        return self.died()

    def close(self, after_window_call_ms: Sequence[float] = (),
              after_window_iter_ms: float | None = None) -> None:
        """Send the times of the calls after the window (one JSON line, when there are
        any: each call's, and the block's time per iteration) and let the finisher go
        (EOF)."""
        stdin, self._stdin = self._stdin, None
        if stdin is None or os.getpid() != self._pid:
            return
        try:
            if after_window_call_ms:
                times: dict[str, Any] = {
                    "after_window_call_ms": [round(t, 6) for t in after_window_call_ms]}
                if after_window_iter_ms is not None:
                    times["after_window_iter_ms"] = round(after_window_iter_ms, 6)
                stdin.write(json.dumps(times).encode() + b"\n")
        except OSError:
            pass  # the finisher is gone
        finally:
            with contextlib.suppress(OSError):
                stdin.close()
            with _finishers_lock:
                if self in _finishers:
                    _finishers.remove(self)

    def died(self) -> str | None:
        """Why the finisher ended with an error, if it did (its stderr's last line)."""
        code = self.proc.poll()
        if code in (None, 0):
            return None
        try:
            lines = self.log.read_text(errors="replace").strip().splitlines()
        except OSError:
            lines = []
        return f"exit status {code}" + (f": {lines[-1]}" if lines else "")

    def wait(self, timeout_s: float) -> bool:
        """Wait for the finisher to end; False if it is still running after ``timeout_s``."""
        if os.getpid() != self._pid:
            return True
        try:
            self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return False
        if self.proc.returncode == 0:
            try:
                self.log.unlink()
            except OSError:
                pass
        return True


def _close_in_child() -> None:
    """A forked child must not hold the parent's pipes open: the finisher waits for EOF."""
    for finisher in _finishers:
        stdin, finisher._stdin = finisher._stdin, None
        if stdin is not None:
            try:
                stdin.close()  # the child's copy only: the parent's pipe stays open
            except OSError:
                pass
    _finishers.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_in_child)
