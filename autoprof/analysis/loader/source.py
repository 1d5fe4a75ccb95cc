"""Reading a trace file's bytes: plain or gzip, with a size cap so bad input stays bounded.

``AUTOPROF_MAX_TRACE_BYTES`` (default 4 GiB) caps both a plain file's size and the
decompressed size of a gzip file; a gzip bomb fails as soon as its output passes the cap.

``stream_bytes(path)`` is how the loader reads: the decoded bytes in blocks of at most
``READ_BYTES`` (plain files read block by block, gzip inflated member after member as its
compressed bytes are read), so a trace never sits in memory whole, neither as the file's
bytes nor as a second copy of them. ``read_bytes(path)`` gives the whole decoded file, for
the loader's fallback (a document whose chunks do not decode) and for ``AUTOPROF_MMAP=1``,
which maps a plain file instead: a mapped file that another process cuts short while it is
decoded ends the whole process with SIGBUS, while a read gives the bytes as they were or a
clean error. FIFOs, sockets and devices are refused before ``open()``.

A ``RemoteFile`` (an fsspec URL, ``loader/remote.py``) is read the same way through
``fsspec``'s file object: streamed block by block, never mapped, never copied to disk.
"""

from __future__ import annotations

import mmap
import os
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from autoprof import env
from autoprof.analysis.loader import remote
from autoprof.analysis.loader.errors import TraceError
from autoprof.analysis.loader.remote import RemoteFile, TracePath
from autoprof.runfolder import confine

DEFAULT_MAX_TRACE_BYTES = env.DEFAULT_MAX_TRACE_BYTES
_GZIP_MAGIC = b"\x1f\x8b"
_BLOCK_BYTES = 4 * 1024**2  # the most one inflate call returns
READ_BYTES = 4 * 1024**2  # one read of the file
RATIO_FLOOR_BYTES = 64 * 1024**2  # below this much output, no ratio is too high


def max_trace_bytes() -> int:
    """The cap from ``AUTOPROF_MAX_TRACE_BYTES`` (bytes), else the 4 GiB default."""
    return env.max_trace_bytes()


def _mib(n_bytes: int) -> str:
    return f"{n_bytes / 1024**2:.1f} MiB"


def _next_member(rest: bytes, handle: BinaryIO, at_end: bool
                 ) -> tuple[bytes | None, bool, int]:
    """After a gzip member: (the next member's first bytes, or None when none follows,
    whether the file is read to its end, how many bytes were read here)."""
    read = 0
    while len(rest) < len(_GZIP_MAGIC) and not at_end:
        more = handle.read(READ_BYTES)
        at_end, read = not more, read + len(more)
        rest += more
    return (rest if rest.startswith(_GZIP_MAGIC) else None), at_end, read


def _gunzip_blocks(path: TracePath, handle: BinaryIO, limit: int) -> Iterator[bytes]:
    """Inflate every gzip member read from ``handle``, refusing to grow past ``limit``
    bytes or past ``max_gzip_ratio`` times the compressed bytes inflated so far
    (``_Bound``); trailing bytes that start no member (zero padding) end the stream."""
    inflater = zlib.decompressobj(wbits=31)
    pending: bytes | None = b""
    at_end, bound = False, _Bound(path, limit)
    try:
        while pending is not None:
            if not pending and not at_end:
                pending = handle.read(READ_BYTES)
                at_end = not pending
                bound.read_bytes += len(pending)
            if not pending and at_end:
                if not inflater.eof:
                    raise TraceError(path, "truncated gzip data (the file ends mid-stream)")
                return
            piece = inflater.decompress(pending, _BLOCK_BYTES)
            pending = inflater.unconsumed_tail
            bound.check(len(piece), max(len(pending), len(inflater.unused_data)))
            yield piece
            if inflater.eof:  # what follows the member is unused_data (unconsumed_tail, when
                # the output limit was hit in this call, holds the same bytes again)
                pending, at_end, more = _next_member(inflater.unused_data, handle, at_end)
                bound.read_bytes += more
                inflater = zlib.decompressobj(wbits=31)
    except zlib.error as exc:
        raise TraceError(path, f"corrupt gzip data ({exc})") from None


class _Bound:
    """What a gzip stream may expand to: at most ``limit`` bytes in all, and, past
    ``RATIO_FLOOR_BYTES``, at most ``max_gzip_ratio()`` times the compressed bytes consumed
    so far (a real trace compresses 5-30 times; a gzip bomb about 1,000 times, and is
    refused after inflating 64 MiB, not gigabytes)."""

    def __init__(self, path: TracePath, limit: int) -> None:
        self.path, self.limit, self.ratio = path, limit, env.max_gzip_ratio()
        self.read_bytes, self.produced = 0, 0

    def check(self, piece_bytes: int, unread_bytes: int) -> None:
        self.produced += piece_bytes
        if self.produced > self.limit:
            raise TraceError(
                self.path,
                f"decompressed size exceeds the {_mib(self.limit)} limit "
                "(gzip bomb? raise AUTOPROF_MAX_TRACE_BYTES if the trace is real)",
            )
        consumed = max(self.read_bytes - unread_bytes, 1)
        if self.produced > RATIO_FLOOR_BYTES and self.produced > self.ratio * consumed:
            raise TraceError(
                self.path,
                f"gzip data expands more than {self.ratio:g} times ({_mib(consumed)} gave "
                f"{_mib(self.produced)} so far): a gzip bomb? (raise AUTOPROF_MAX_GZIP_RATIO "
                "if the trace is real)",
            )


def _plain_blocks(path: TracePath, handle: BinaryIO, limit: int) -> Iterator[bytes]:
    """The file's bytes block by block, from where ``handle`` is; a file that grows past
    ``limit`` while read fails."""
    produced = 0
    while block := handle.read(READ_BYTES):
        produced += len(block)
        if produced > limit:
            raise TraceError(path, f"file grew past the {_mib(limit)} limit while read")
        yield block


def refuse_special(path: Path, mode: int) -> None:
    """TraceError for a FIFO, socket or device, before any open(): opening a FIFO blocks
    until something writes to it, and a device can stream for ever
    (``runfolder.confine``'s rule)."""
    kind = confine.special_kind(mode)
    if kind is not None:
        raise TraceError(path, f"is {kind}, not a trace file")


class _Opened:
    """An open trace file checked for size and kind: ``gzip`` is whether it holds gzip data."""

    def __init__(self, path: TracePath, folder: Path | None = None) -> None:
        self.path, self.limit, self.folder = path, max_trace_bytes(), folder
        self.remote = isinstance(path, RemoteFile)
        if isinstance(path, RemoteFile):
            self._open_remote(path)
        else:
            self._open_local(path)
        try:
            self.gzip = self._check()
        except BaseException:
            self.handle.close()
            raise
        self.handle.seek(0)

    def _open_local(self, path: Path) -> None:
        try:
            self.handle: BinaryIO = confine.open_regular(path, self.folder)
            self.size = os.fstat(self.handle.fileno()).st_size
        except IsADirectoryError:
            raise TraceError(path, "is a folder, not a trace file") from None
        except confine.ReadRefused as refused:
            raise TraceError(path, refused.problem.replace("regular file", "trace file")
                             ) from None
        except OSError as exc:
            raise TraceError(path, f"cannot read: {exc.strerror or exc}") from None

    def _open_remote(self, path: RemoteFile) -> None:
        found = remote.info(path)
        if found.get("type") == "directory":
            raise TraceError(path, "is a folder, not a trace file")
        self.size = int(found.get("size") or 0)
        self.handle = remote.open_file(path)

    def _check(self) -> bool:
        if self.size == 0:
            raise TraceError(self.path, "empty file (0 bytes)")
        head = self.handle.read(2)
        if head == _GZIP_MAGIC:
            return True
        if self.path.name.endswith(".gz"):
            raise TraceError(self.path, f"named .gz but not gzip data (starts with {head!r})")
        if self.size > self.limit:
            raise TraceError(
                self.path,
                f"file is {_mib(self.size)}, above the {_mib(self.limit)} limit "
                "(raise AUTOPROF_MAX_TRACE_BYTES to load it)",
            )
        return False

    def blocks(self) -> Iterator[bytes]:
        reader = _gunzip_blocks if self.gzip else _plain_blocks
        return reader(self.path, self.handle, self.limit)

    def decoded_size(self) -> int | None:
        """The decoded size: a plain file's; a gzip file's from its trailer (ISIZE, the
        last member's size modulo 4 GiB: None where it cannot be the whole file's)."""
        if not self.gzip:
            return self.size
        try:
            at = self.handle.tell()
            self.handle.seek(self.size - 4)
            size = int.from_bytes(self.handle.read(4), "little")
            self.handle.seek(at)
        except (OSError, ValueError):
            return None
        return size if size > self.size else None

    def fraction_read(self) -> float:
        """How much of the file (compressed bytes for gzip) has been read, 0 to 1."""
        try:
            return min(1.0, self.handle.tell() / max(self.size, 1))
        except (OSError, ValueError):
            return 1.0


class ByteStream:
    """``stream_bytes``' answer: iterate for the decoded blocks; ``fraction_read()`` for
    progress; ``gzip`` tells how the file is stored; ``decoded_size`` is its decoded size
    when known before reading (None for some gzip files); ``n_bytes`` counts the decoded
    bytes handed out. With ``start``, the decoded bytes before that offset are skipped (a
    plain file seeks, a gzip file inflates them and drops them). Closes the file when
    exhausted (or on ``close()``)."""

    def __init__(self, path: TracePath, start: int = 0) -> None:
        self._opened = _Opened(path)
        self.gzip = self._opened.gzip
        self.decoded_size = self._opened.decoded_size()
        self.n_bytes = 0  # decoded bytes handed out so far
        self._skip = start
        if start and not self.gzip:
            self._opened.handle.seek(start)
            self._skip = 0

    def __iter__(self) -> Iterator[bytes]:
        with self._opened.handle:
            skip = self._skip
            for block in self._opened.blocks():
                if skip:  # a gzip file's bytes before ``start``
                    dropped = min(skip, len(block))
                    skip -= dropped
                    block = block[dropped:]
                    if not block:
                        continue
                self.n_bytes += len(block)
                yield block

    def fraction_read(self) -> float:
        return self._opened.fraction_read()

    def close(self) -> None:
        self._opened.handle.close()


def stream_bytes(path: TracePath, start: int = 0) -> ByteStream:
    """The decoded bytes of a trace file in blocks (module doc), from the decoded offset
    ``start`` on; raises TraceError."""
    return ByteStream(path, start)


def read_bytes(
    path: TracePath, progress: Callable[[float, str], None] | None = None,
    folder: Path | None = None,
) -> bytes | bytearray | mmap.mmap:
    """The whole decoded file: read (or mapped with ``AUTOPROF_MMAP=1``) when plain,
    inflated when gzip. With ``folder``, a local file must resolve inside it
    (``runfolder.confine``)."""
    opened = _Opened(path, folder)
    with opened.handle as handle:
        if opened.gzip:
            out = bytearray()
            for block in opened.blocks():
                out += block
                if progress is not None:
                    progress(0.1 * opened.fraction_read(), f"decompressing {path.name}")
            return out
        if not env.mmap_enabled() or opened.remote:  # a mapped file cut short is SIGBUS
            return handle.read()
        try:
            return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            handle.seek(0)
            return handle.read()
