"""Where a reader may read: the one rule for every file a run folder holds.

A file that a run folder holds (a trace, a source-lines trace, ``whatif.json``, a manifest)
is read only when

- it resolves, symlinks followed, inside that folder (or inside the traces root a server
  was given): a link out of it is refused, never followed;
- it is a regular file: a FIFO, socket or device is refused before it is opened (a FIFO
  would block ``open()`` until something writes to it; a device can stream for ever), and
  the open itself never blocks (``O_NONBLOCK``), so one swapped in after that check is
  refused on the open descriptor instead of stalling the reader.

:func:`open_regular` is that rule; :func:`read_regular` adds a size cap for small files
(manifests, ``whatif.json``). Both raise :class:`ReadRefused` (a ``ValueError`` with the path
and a one-line problem) for a refusal, and ``OSError`` when the file cannot be read at all.
Caches are not read here: their own reader (a cache is ignored, never refused) owns them.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

_SPECIAL_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                  (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


class ReadRefused(ValueError):
    """A file a reader must not open: outside its folder, or not a regular file.
    ``str(err)`` is ``"<path>: <problem>"``."""

    def __init__(self, path: str | Path, problem: str) -> None:
        self.path, self.problem = str(path), problem
        super().__init__(f"{path}: {problem}")

    def __reduce__(self) -> tuple[type[ReadRefused], tuple[str, str]]:
        return (ReadRefused, (self.path, self.problem))


def special_kind(mode: int) -> str | None:
    """"a FIFO", "a socket", "a character device", "a block device", or None (a regular file
    or a folder)."""
    return next((kind for is_kind, kind in _SPECIAL_KINDS if is_kind(mode)), None)


def is_inside(path: Path, folder: Path) -> bool:
    """Does ``path``, resolved (symlinks followed), lie inside ``folder`` resolved?"""
    try:
        path.resolve().relative_to(folder.resolve())
    except (ValueError, OSError, RuntimeError):  # outside, a loop, a NUL in the name
        return False
    return True


def resolve_inside(path: Path, folder: Path, what: str = "the run folder") -> Path:
    """``path`` resolved; ReadRefused when it leads (through a link) outside ``folder``."""
    if not is_inside(path, folder):
        raise ReadRefused(path, f"resolves outside {what} (symlink escape refused)")
    return path.resolve()


def refuse_special(path: Path, mode: int) -> None:
    """ReadRefused for a FIFO, socket or device (from its ``st_mode``)."""
    kind = special_kind(mode)
    if kind is not None:
        raise ReadRefused(path, f"is {kind}, not a regular file")


def check_regular(path: Path, folder: Path, what: str = "the run folder") -> None:
    """ReadRefused unless ``path`` is a regular file inside ``folder`` (by ``stat``, nothing
    opened: for listing the files a reader will open); OSError when it cannot be stat'ed."""
    refuse_special(path, os.stat(resolve_inside(path, folder, what)).st_mode)


def refusal(path: Path, folder: Path, what: str = "the run folder") -> str | None:
    """Why :func:`check_regular` refuses ``path`` (one line naming it), or None."""
    try:
        check_regular(path, folder, what)
    except ReadRefused as refused:
        return str(refused)
    except OSError as exc:
        return f"{path}: cannot read: {exc.strerror or exc}"
    return None


def open_regular(path: Path, folder: Path | None = None,
                 what: str = "the run folder") -> BinaryIO:
    """``path`` opened for reading in binary, once it is known to be a regular file inside
    ``folder`` (when given); the module doc's rule. Raises ReadRefused or OSError
    (IsADirectoryError for a folder)."""
    target = resolve_inside(path, folder, what) if folder is not None else path
    refuse_special(path, os.stat(target).st_mode)  # before open(): no side effect of opening
    flags = _OPEN_FLAGS | (getattr(os, "O_NOFOLLOW", 0) if folder is not None else 0)
    try:
        fd = os.open(target, flags)
    except OSError as exc:
        if folder is not None and exc.errno == errno.ELOOP:
            raise ReadRefused(path, "became a symlink while opened (refused)") from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(21, "Is a directory", str(path))
        refuse_special(path, mode)  # swapped in after the check above
        _blocking(fd)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _blocking(fd: int) -> None:
    """Reads of a regular file never block; the flag is cleared all the same."""
    with contextlib.suppress(ImportError, OSError):
        import fcntl

        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)


def read_regular(path: Path, max_bytes: int, folder: Path | None = None,
                 what: str = "the run folder") -> bytes:
    """The bytes of a small file under :func:`open_regular`'s rule; ReadRefused when it is
    larger than ``max_bytes``."""
    with open_regular(path, folder, what) as handle:
        size = os.fstat(handle.fileno()).st_size
        data = handle.read(max_bytes + 1) if size <= max_bytes else b""
    if size > max_bytes or len(data) > max_bytes:
        raise ReadRefused(path, f"is {max(size, len(data))} bytes, more than the "
                                f"{max_bytes} a file of this kind may hold")
    return data


__all__ = ["ReadRefused", "check_regular", "is_inside", "open_regular", "read_regular",
           "refusal", "refuse_special", "resolve_inside", "special_kind"]
