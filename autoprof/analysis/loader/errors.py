"""The one error the loader raises for bad input."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from autoprof.analysis.loader.remote import RemoteFile

_MAX_PROBLEM_CHARS = 300


def _one_line(text: str) -> str:
    """Collapse whitespace and control characters so the message stays on one line."""
    cleaned = "".join(ch if ch.isprintable() else " " for ch in text)
    cleaned = " ".join(cleaned.split())
    if len(cleaned) > _MAX_PROBLEM_CHARS:
        cleaned = cleaned[: _MAX_PROBLEM_CHARS - 3] + "..."
    return cleaned


class TraceError(ValueError):
    """A trace, manifest or run folder that autoprof cannot read.

    ``str(err)`` is one line, ``"<path>: <problem>"``; ``err.path`` and ``err.problem`` hold
    the two parts. The CLI prints that line and exits with status 2.
    """

    def __init__(self, path: str | Path | RemoteFile, problem: str) -> None:
        self.path = str(path)
        self.problem = _one_line(problem)
        super().__init__(f"{_one_line(self.path)}: {self.problem}")

    def __reduce__(self) -> tuple[type[TraceError], tuple[str, str]]:
        return (TraceError, (self.path, self.problem))
