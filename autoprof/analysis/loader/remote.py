"""Traces read where they lie: an fsspec URL (``s3://``, ``gs://``, ``memory://``,
``file://``) for a run folder or a trace, when ``fsspec`` is installed
(``pip install 'autoprof[remote]'``).

``RemoteFile`` names one file or folder by its URL; the loader's types say ``TracePath``
(a local ``Path`` or a ``RemoteFile``) where either may come. Local paths never reach this
module: ``is_url`` is true only for text of the form ``scheme://...``, and the loader keeps
its local code path for everything else. fsspec is imported on first use, so the loader
imports without it; a URL without it is a ``TraceError`` naming the URL and saying
``pip install fsspec``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from autoprof.analysis.loader.errors import TraceError

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_LOCAL_SCHEMES = ("file", "local")  # fsspec's names for this machine's own files
INSTALL_HINT = "reading a URL needs fsspec: pip install fsspec (or 'autoprof[remote]')"


@dataclass(frozen=True)
class RemoteFile:
    """One file or folder named by an fsspec URL (``memory://runs/r1/rank0.json``)."""

    url: str

    @property
    def name(self) -> str:
        """The last part of the URL's path, as ``Path.name``."""
        return self.url.rstrip("/").rsplit("/", 1)[-1]

    @property
    def parent(self) -> RemoteFile:
        """The folder that holds it (the URL up to its last ``/``)."""
        head, _, _ = self.url.rstrip("/").rpartition("/")
        return RemoteFile(head if not head.endswith(":/") else head + "/")

    def __truediv__(self, name: str) -> RemoteFile:
        return RemoteFile(self.url.rstrip("/") + "/" + name)

    def __str__(self) -> str:
        return self.url


TracePath = Path | RemoteFile


def is_url(path: object) -> bool:
    """Whether ``path`` names a remote location: a ``RemoteFile``, or text ``scheme://...``
    (a ``Path`` never is: pathlib folds ``//``)."""
    return isinstance(path, RemoteFile) or (isinstance(path, str) and bool(_URL.match(path)))


def local_path_of(path: str | Path) -> str | Path:
    """The local path a ``file://`` (or ``local://``) URL names; anything else unchanged. A
    local file named by URL is read as its path is (``loader/inputs.py``): inside its run
    folder, a regular file, never a FIFO."""
    if not isinstance(path, str):
        return path
    scheme, sep, rest = path.partition("://")
    if not sep or scheme.lower() not in _LOCAL_SCHEMES or not _URL.match(path):
        return path
    if rest.lower().startswith("localhost/"):
        rest = rest[len("localhost"):]
    return Path(rest or "/")


def filesystem(target: RemoteFile) -> tuple[AbstractFileSystem, str]:
    """The fsspec filesystem of ``target`` and its path there; TraceError without fsspec or
    for a scheme fsspec does not know (or whose package is missing)."""
    try:
        from fsspec.core import url_to_fs
    except ImportError:
        raise TraceError(target, INSTALL_HINT) from None
    try:
        fs, path = url_to_fs(target.url)
    except (ImportError, ValueError) as exc:
        raise TraceError(target, f"cannot open this URL ({exc})") from None
    if "file" in _protocols(fs):  # this machine's files: read by path, never by URL
        raise TraceError(target, "names a local file: give its path (or a file:// URL)")
    return fs, str(path)


def _protocols(fs: AbstractFileSystem) -> tuple[str, ...]:
    protocol = getattr(fs, "protocol", ())
    return (protocol,) if isinstance(protocol, str) else tuple(protocol)


def info(target: RemoteFile) -> dict[str, Any]:
    """fsspec's ``info`` (``type``, ``size``, and what the store adds: ``mtime``, ``ETag``);
    TraceError when it does not exist or cannot be reached."""
    fs, path = filesystem(target)
    try:
        found: dict[str, Any] = fs.info(path)
    except FileNotFoundError:
        raise TraceError(target, "no such file or folder") from None
    except (OSError, ValueError) as exc:
        raise TraceError(target, f"cannot read: {exc}") from None
    return found


def open_file(target: RemoteFile) -> BinaryIO:
    """The file opened for reading (streamed: fsspec reads it block by block)."""
    fs, path = filesystem(target)
    try:
        handle: BinaryIO = fs.open(path, "rb")
    except FileNotFoundError:
        raise TraceError(target, "no such file or folder") from None
    except (OSError, ValueError) as exc:
        raise TraceError(target, f"cannot read: {exc}") from None
    return handle


def read_small(target: RemoteFile, max_bytes: int, what: str) -> bytes:
    """A small file's bytes (a manifest); TraceError when above ``max_bytes``."""
    size = int(info(target).get("size") or 0)
    if size > max_bytes:
        raise TraceError(target, f"{what} is {size} bytes, too large to be a {what}")
    with open_file(target) as handle:
        return handle.read(max_bytes + 1)


def listing(folder: RemoteFile) -> list[tuple[RemoteFile, bool]]:
    """The folder's entries, sorted by URL, each with whether it is a folder."""
    fs, path = filesystem(folder)
    try:
        entries = fs.ls(path, detail=True)
    except (OSError, ValueError) as exc:
        raise TraceError(folder, f"cannot list: {exc}") from None
    out = [(folder / str(e["name"]).rstrip("/").rsplit("/", 1)[-1], e.get("type") == "directory")
           for e in entries]
    return sorted(out, key=lambda item: item[0].url)


def version_tag(target: RemoteFile) -> dict[str, Any]:
    """What tells this version of the file from another at the same URL: its size and
    whichever of the store's etag, mtime or generation it reports (as text)."""
    found = info(target)
    tag: dict[str, Any] = {"url": target.url, "size": int(found.get("size") or 0)}
    for key in ("ETag", "etag", "mtime", "LastModified", "last_modified", "updated",
                "generation", "created"):
        if found.get(key) is not None:
            tag[key] = str(found[key])
    return tag


__all__ = ["INSTALL_HINT", "RemoteFile", "TracePath", "filesystem", "info", "is_url",
           "listing", "local_path_of", "open_file", "read_small", "version_tag"]
