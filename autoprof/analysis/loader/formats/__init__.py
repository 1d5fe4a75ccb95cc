"""Trace formats: each ``Reader`` turns one kind of file into a ``TraceFile`` (the events as
columns plus the file's metadata), the one shape everything after the loader's decode reads.

Supporting a new format (a Perfetto trace, an Nsight Systems export) is one new module here
with a class that has ``name``, ``can_read(path)`` and ``read(path, progress)``, and one line
in ``READERS``. Readers are asked in order; the first whose ``can_read`` says yes reads the
file.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from autoprof.analysis.loader.errors import TraceError
from autoprof.analysis.loader.formats.kineto_json import KinetoJson
from autoprof.analysis.loader.remote import TracePath

if TYPE_CHECKING:
    from autoprof.analysis.loader.decode import TraceFile

Progress = Callable[[float, str], None]


class Reader(Protocol):
    """One trace format."""

    name: str

    def can_read(self, path: TracePath) -> bool:
        """Whether the file's name says it is this format (cheap: reads no bytes)."""
        ...

    def read(self, path: TracePath, progress: Progress | None = None) -> TraceFile:
        """The file's events as columns; bad input raises TraceError naming the file."""
        ...


READERS: tuple[Reader, ...] = (
    KinetoJson(),
)


def reader_for(path: TracePath) -> Reader | None:
    """The first reader that can read ``path``, or None."""
    return next((r for r in READERS if r.can_read(path)), None)


def can_read(path: TracePath) -> bool:
    """Whether some reader takes a file of this name."""
    return reader_for(path) is not None


def read(path: TracePath, progress: Progress | None = None) -> TraceFile:
    """``path`` read by the first reader that takes it."""
    reader = reader_for(path)
    if reader is None:
        known = ", ".join(r.name for r in READERS)
        raise TraceError(path, f"no reader for this file name (formats read: {known})")
    return reader.read(path, progress)


__all__ = ["READERS", "KinetoJson", "Reader", "can_read", "read", "reader_for"]
