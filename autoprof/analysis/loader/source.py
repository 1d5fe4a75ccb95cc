"""Reading a trace file's bytes: plain or gzip, with a size cap so bad input stays bounded.

``AUTOPROF_MAX_TRACE_BYTES`` (default 4 GiB) caps both a plain file's size and the
decompressed size of a gzip file; a gzip bomb fails as soon as its output passes the cap,
holding at most the cap (plus one 16 MiB block) in memory.

Plain files are read into memory, not memory-mapped, unless ``AUTOPROF_MMAP=1``: a mapped
file that another process cuts short while it is decoded (a trace re-exported or copied over
in place) ends the whole process with SIGBUS, while a read gives the bytes as they were or a
clean error. Measured on a 89 MB trace (270k events, 2 cores): 0.45 s read vs 0.38 s mapped,
peak memory 274 MB vs 195 MB. FIFOs, sockets and devices are refused before ``open()``.
"""

from __future__ import annotations

import mmap
import stat
import zlib
from collections.abc import Callable
from pathlib import Path

from autoprof import env
from autoprof.analysis.loader.errors import TraceError

DEFAULT_MAX_TRACE_BYTES = env.DEFAULT_MAX_TRACE_BYTES
_GZIP_MAGIC = b"\x1f\x8b"
_BLOCK_BYTES = 16 * 1024**2


def max_trace_bytes() -> int:
    """The cap from ``AUTOPROF_MAX_TRACE_BYTES`` (bytes), else the 4 GiB default."""
    return env.max_trace_bytes()


def _mib(n_bytes: int) -> str:
    return f"{n_bytes / 1024**2:.1f} MiB"


def _gunzip(
    path: Path, compressed: bytes | mmap.mmap, limit: int,
    progress: Callable[[float, str], None] | None = None,
) -> bytearray:
    """Decompress every gzip member, refusing to grow past ``limit`` bytes."""
    out = bytearray()
    view = memoryview(compressed)
    pos = 0
    try:
        while pos < len(view):
            inflater = zlib.decompressobj(wbits=31)
            chunk: bytes | memoryview = view[pos:]
            while True:
                piece = inflater.decompress(chunk, _BLOCK_BYTES)
                out += piece
                if len(out) > limit:
                    raise TraceError(
                        path,
                        f"decompressed size exceeds the {_mib(limit)} limit "
                        "(gzip bomb? raise AUTOPROF_MAX_TRACE_BYTES if the trace is real)",
                    )
                chunk = inflater.unconsumed_tail
                if progress is not None:
                    done = len(view) - len(chunk) - len(inflater.unused_data)
                    progress(0.1 * done / max(len(view), 1), f"decompressing {path.name}")
                if inflater.eof or (not chunk and not piece):
                    break
            if not inflater.eof:
                raise TraceError(path, "truncated gzip data (the file ends mid-stream)")
            rest = inflater.unused_data
            pos = len(view) - len(rest)
            if rest.strip(b"\x00") == b"":  # trailing zero padding is allowed
                break
            if not rest.startswith(_GZIP_MAGIC):
                break
    except zlib.error as exc:
        raise TraceError(path, f"corrupt gzip data ({exc})") from None
    finally:
        view.release()
    return out


_SPECIAL_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                  (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def refuse_special(path: Path, mode: int) -> None:
    """TraceError for a FIFO, socket or device, before any open(): opening a FIFO blocks
    until something writes to it, and a device can stream for ever."""
    for is_kind, kind in _SPECIAL_KINDS:
        if is_kind(mode):
            raise TraceError(path, f"is {kind}, not a trace file")


def read_bytes(
    path: Path, progress: Callable[[float, str], None] | None = None
) -> bytes | bytearray | mmap.mmap:
    """The decoded bytes of a trace file (memory-mapped when plain, decompressed when gzip)."""
    limit = max_trace_bytes()
    try:
        info = path.stat()
        refuse_special(path, info.st_mode)
        size = info.st_size
        handle = open(path, "rb")  # noqa: SIM115 - closed below
    except IsADirectoryError:
        raise TraceError(path, "is a folder, not a trace file") from None
    except OSError as exc:
        raise TraceError(path, f"cannot read: {exc.strerror or exc}") from None
    with handle:
        if size == 0:
            raise TraceError(path, "empty file (0 bytes)")
        head = handle.read(2)
        if head == _GZIP_MAGIC:
            handle.seek(0)
            return _gunzip(path, handle.read(), limit, progress)
        if path.name.endswith(".gz"):
            raise TraceError(path, f"named .gz but not gzip data (starts with {head!r})")
        if size > limit:
            raise TraceError(
                path,
                f"file is {_mib(size)}, above the {_mib(limit)} limit "
                "(raise AUTOPROF_MAX_TRACE_BYTES to load it)",
            )
        if not env.mmap_enabled():  # the default: a mapped file cut short is SIGBUS
            handle.seek(0)
            return handle.read()
        try:
            return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            handle.seek(0)
            return handle.read()
