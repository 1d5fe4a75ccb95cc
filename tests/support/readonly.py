"""A folder that refuses writes the way a read-only one does, also for root.

Root ignores a folder's mode bits (CI runs as root), so ``chmod 0o500`` proves nothing there.
``read_only(monkeypatch, folder)`` makes every Python-level write under ``folder`` fail with
``PermissionError(EACCES)``: creating or opening a file for writing (``os.open``, ``open``,
``Path.open``), making a folder (``os.mkdir``, hence ``os.makedirs``) and renaming into it
(``os.replace``, ``os.rename``). Reads still work.
"""

from __future__ import annotations

import builtins
import errno
import io
import os
from pathlib import Path
from typing import Any

import pytest

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


class _Folder:
    """The folder's real path, and whether a path lies under it."""

    def __init__(self, folder: Path) -> None:
        self.root = os.path.realpath(folder)

    def inside(self, path: Any) -> bool:
        if isinstance(path, int):  # a file descriptor: opened before, not a new write
            return False
        full = os.path.realpath(os.fspath(path))
        return full == self.root or full.startswith(self.root + os.sep)

    def check(self, path: Any) -> None:
        """Raise what a read-only folder raises, for a write under it."""
        if self.inside(path):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))


def read_only(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    guard = _Folder(folder)
    real_open, real_os_open = builtins.open, os.open
    real_mkdir, real_replace, real_rename = os.mkdir, os.replace, os.rename

    def fake_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if any(c in mode for c in "wax+"):
            guard.check(file)
        return real_open(file, mode, *args, **kwargs)

    def fake_os_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if flags & _WRITE_FLAGS:
            guard.check(path)
        return real_os_open(path, flags, *args, **kwargs)

    def fake_mkdir(path: Any, *args: Any, **kwargs: Any) -> None:
        guard.check(path)
        real_mkdir(path, *args, **kwargs)

    def fake_move(real: Any) -> Any:
        def move(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
            if guard.inside(src):
                raise PermissionError(errno.EACCES, "Permission denied", os.fspath(dst))
            guard.check(dst)
            real(src, dst, *args, **kwargs)
        return move

    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr(io, "open", fake_open)  # pathlib's Path.open
    monkeypatch.setattr(os, "open", fake_os_open)
    monkeypatch.setattr(os, "mkdir", fake_mkdir)
    monkeypatch.setattr(os, "replace", fake_move(real_replace))
    monkeypatch.setattr(os, "rename", fake_move(real_rename))
