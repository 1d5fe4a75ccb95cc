"""What a command says on stderr while it works: the load's progress (`Progress`), the
analysis phase it is in (`PhaseLine`), and warnings on one line of their own
(`one_line_warning`)."""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

from autoprof.cli.common import PROGRESS_AFTER_S, say


class Progress:
    """A `load(progress=...)` callback that reports on stderr, for big traces only.

    Accepts `(done, total)` (bytes or events), a fraction in [0, 1], or a message string.
    """

    def __init__(self, path: str, stream: Any = None) -> None:
        self.path = path
        self.stream = stream if stream is not None else sys.stderr
        self.started = time.monotonic()
        self.last = 0.0
        self.shown = False
        self.width = 0  # of the longest progress line written

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        now = time.monotonic()
        if now - self.started < PROGRESS_AFTER_S or now - self.last < 0.25:
            return
        self.last = now
        numbers = [a for a in args if isinstance(a, int | float) and not isinstance(a, bool)]
        texts = [str(a) for a in args if isinstance(a, str)]
        if len(numbers) >= 2 and numbers[1]:
            what = f"{100.0 * numbers[0] / numbers[1]:.0f}%"
        elif len(numbers) == 1 and 0 <= numbers[0] <= 1:
            what = " ".join([f"{100.0 * numbers[0]:.0f}%", *texts])
        else:
            what = " ".join(texts) or "working"
        line = f"autoprof: loading {self.path}: {what} "
        self.stream.write("\r" + line)
        self.stream.flush()
        self.shown = True
        self.width = max(self.width, len(line))

    def done(self) -> None:
        if self.shown:
            elapsed = time.monotonic() - self.started
            self.stream.write(f"\rautoprof: loaded {self.path} in {elapsed:.1f} s\n")
            self.stream.flush()

    def failed(self) -> None:
        """The load failed: blank the progress line, so only the error line remains."""
        if self.shown:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()


class PhaseLine:
    """While the summary is computed: once it has taken PROGRESS_AFTER_S, a stderr line that
    names the analysis phase it is in (`autoprof.analysis.loader.phase`) and the time so far,
    rewritten every 0.25 s by a thread of its own (a phase need not report to be shown). A
    warning said meanwhile (`one_line_warning`) blanks it first, so the warning gets a line
    of its own; the next tick draws it again below."""

    active: PhaseLine | None = None  # the line being shown, if any (one command at a time)

    def __init__(self, path: str, stream: Any = None) -> None:
        self.path = path
        self.stream = stream if stream is not None else sys.stderr
        self.name = "analysing"
        self.started = time.monotonic()
        self.width = 0  # the longest line drawn: 0 while none was
        self._drawn = False  # a line is on the terminal now
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, name="autoprof-progress",
                                        daemon=True)
        self._listening: Any = None

    def __call__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> PhaseLine:
        from autoprof.analysis.loader.phase import listening

        self.started = time.monotonic()
        self._listening = listening(self)
        self._listening.__enter__()
        PhaseLine.active = self
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        PhaseLine.active = None
        self._listening.__exit__(None, None, None)
        if self.width:  # a line was shown: end it, or blank it when the summary failed
            elapsed = time.monotonic() - self.started
            done = f"autoprof: analysed {self.path} in {elapsed:.1f} s"
            self.stream.write("\r" + (done.ljust(self.width) + "\n" if exc[0] is None
                                      else " " * self.width + "\r"))
            self.stream.flush()

    def _tick(self) -> None:
        while not self._stop.wait(0.25):
            elapsed = time.monotonic() - self.started
            if elapsed < PROGRESS_AFTER_S:
                continue
            line = f"autoprof: analysing {self.path}: {self.name} ({elapsed:.0f} s) "
            with self._lock:
                self.stream.write("\r" + line.ljust(self.width if self._drawn else 0))
                self.stream.flush()
                self.width = max(self.width, len(line))
                self._drawn = True

    def blank(self) -> None:
        """Clear the line on the terminal (a message is about to be written there)."""
        with self._lock:
            if self._drawn:
                self.stream.write("\r" + " " * self.width + "\r")
                self.stream.flush()
                self._drawn = False


def one_line_warning(message: Warning | str, category: type[Warning], filename: str,
                      lineno: int, file: Any = None, line: str | None = None) -> None:
    """warnings.showwarning for the command: `autoprof: warning: <message>`, one line
    (not Python's two, with the source line of the analysis that raised it), on a line of its
    own when a progress line is shown."""
    if PhaseLine.active is not None:
        PhaseLine.active.blank()
    say(f"autoprof: warning: {message}")
