"""autoprof's own files: the one way anything autoprof writes is created, and the one way a
cache is read.

Writing: a new file is created exclusively (``O_CREAT | O_EXCL | O_NOFOLLOW``) under a hidden
temporary name with an unpredictable part (:func:`temp_name`), in the target's own folder, and
renamed onto the target only when that target is absent or a regular file
(:func:`replace_own`): a symlink, FIFO, folder or device found at the name is left alone and
the write fails with :class:`NotOurs`. Neither step follows a link, so a link planted at the
final name or at any temporary name is never written through. What another library writes
by path (torch's trace export) goes into a fresh private folder (0700, created by us) and is
renamed out of it the same way (:func:`write_through`).

Reading a cache: :func:`read_regular` opens without following a link and without blocking
(``O_NOFOLLOW | O_NONBLOCK``), and returns nothing unless what it opened is a regular file of
bounded size: a FIFO, device or link named like a cache is as good as no cache.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
_READ = os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC
TEMP_RANDOM_BYTES = 8  # 16 hex digits: not guessable before the file exists


class NotOurs(OSError):
    """The name autoprof was about to write holds something it did not write (a symlink, a
    FIFO, a folder, a device): it is left as it is."""


def temp_name(path: Path) -> Path:
    """The hidden temporary sibling ``path`` is written to before the rename: the pid says
    whose it is (the finisher removes those of processes that are gone), the random part
    makes the name unguessable and keeps two threads of one process apart."""
    return path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(TEMP_RANDOM_BYTES).hex()}.tmp")


def create_temp(path: Path, mode: int = 0o666) -> tuple[int, Path]:
    """A new, empty, regular file beside ``path`` that no one else has opened: its descriptor
    (open for writing) and its name. Never follows a link; never opens an existing file."""
    tmp = temp_name(path)
    return os.open(tmp, _CREATE, mode), tmp


def _kind(mode: int) -> str | None:
    """None for a regular file, else what the entry is, in words."""
    if stat.S_ISREG(mode):
        return None
    kinds = ((stat.S_ISLNK, "symlink"), (stat.S_ISDIR, "folder"), (stat.S_ISFIFO, "FIFO"),
             (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "device"), (stat.S_ISBLK, "device"))
    return next((word for test, word in kinds if test(mode)), "special file")


def replace_own(tmp: Path, path: Path) -> None:
    """Rename ``tmp`` onto ``path`` unless ``path`` is something other than a regular file
    (then :class:`NotOurs`, and ``tmp`` is left for the caller to remove). The rename
    replaces the directory entry, never writes through what it names."""
    try:
        kind = _kind(os.lstat(path).st_mode)
    except FileNotFoundError:
        kind = None
    if kind is not None:
        raise NotOurs(f"{path}: refused to replace a {kind} (autoprof writes only its own "
                      "regular files)")
    os.replace(tmp, path)


def remove_quietly(path: Path) -> None:
    """Remove a temporary file, or a private temporary folder with what is in it; a link is
    removed itself, never followed. Errors are ignored."""
    try:
        if stat.S_ISDIR(os.lstat(path).st_mode):
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink()
    except OSError:
        pass


def open_fresh(path: Path) -> IO[bytes]:
    """A new, empty file at ``path`` open for writing (a log another process appends to):
    created exclusively, then renamed into place at once."""
    fd, tmp = create_temp(path)
    try:
        replace_own(tmp, path)
    except BaseException:
        os.close(fd)
        remove_quietly(tmp)
        raise
    return os.fdopen(fd, "wb")


@contextlib.contextmanager
def private_temp_dir(path: Path) -> Iterator[Path]:
    """A fresh folder (0700, temporary-named) beside ``path``, removed with its content
    when the block ends."""
    folder = temp_name(path)
    os.mkdir(folder, 0o700)  # mkdir never follows a link and fails on any existing name
    try:
        yield folder
    finally:
        remove_quietly(folder)


def write_through(path: Path, write: Callable[[Path], None]) -> Path:
    """Let ``write`` (a library that writes to a path it is given) write a file into a
    private folder, then rename that file onto ``path`` (:func:`replace_own`). OSError when
    ``write`` left no regular file."""
    with private_temp_dir(path) as folder:
        out = folder / path.name
        write(out)
        try:
            kind = _kind(os.lstat(out).st_mode)
        except FileNotFoundError:
            kind = "nothing"
        if kind is not None:
            raise OSError(f"{path}: the writer left {kind}, not a file")
        replace_own(out, path)
    return path


def read_regular(path: Path, max_bytes: int) -> bytes | None:
    """The bytes of ``path`` when it is a regular file (not a link, FIFO, device or folder)
    of at most ``max_bytes``; else None. Never blocks, never raises OSError."""
    fd = open_regular(path)
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as fh:
        try:
            if os.fstat(fh.fileno()).st_size > max_bytes:
                return None
            data = fh.read(max_bytes + 1)
        except OSError:
            return None
    return data if len(data) <= max_bytes else None


def open_regular(path: Path) -> int | None:
    """A read-only descriptor of ``path`` when it is a regular file reached without a link;
    None otherwise (never blocks on a FIFO). The caller closes it."""
    try:
        fd = os.open(path, _READ)
    except OSError:
        return None
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        regular = False
    if not regular:
        os.close(fd)
        return None
    return fd
