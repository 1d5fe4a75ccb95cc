"""Cutting a stream of a Kineto JSON trace's bytes into pieces that decode on their own.

``}``, ``,``, ``{`` and a trace event's first key (``"ph"``, ``"name"``, ...) with only
whitespace between them is a candidate boundary between two ``traceEvents`` entries, in
Kineto's indented layout and in compact one-line JSON alike. ``cut_stream`` looks for one
about every ``chunk_bytes`` after the ``"traceEvents"`` key, as the blocks arrive, and yields:

- ``("head", bytes)`` once, at the first cut: everything before it (the top-level keys that
  come first, the list's opening and its first events);
- ``("middle", bytes)`` for each stretch between two cuts (events, each followed by its
  comma), as soon as the next cut is found;
- ``("tail", bytes)`` at the end: everything from the last cut (the last events, the list's
  close and the top-level keys that come after it);
- or ``("whole", bytes)`` alone, the whole document, when it starts with no ``{``, holds no
  ``"traceEvents"`` key or offers fewer than two cuts: it is then decoded in one piece.

At most about two chunks plus one block of the stream are held at a time (the head, the bytes
since the last cut, the block just read), whatever the file's size. Where the cuts fall does
not depend on the block size: a cut is looked for only once the stream holds the whole
window it is looked for in (or has ended).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Literal

PieceKind = Literal["head", "middle", "tail", "whole"]

# "}" "," "{" between two traceEvents entries, the "{" followed by a trace event's key; the
# whitespace covers Kineto's one-key-per-line layout and compact one-line JSON alike
EVENT_START = re.compile(rb'\}\s*,\s*(\{)\s*"(?:ph|cat|name|pid|tid|ts|dur|args|id)"')
SEARCH_WINDOW_BYTES = 1024**2
_KEY = b'"traceEvents"'
_OBJECT_START = re.compile(rb"[ \t\r\n]*\{")


class _Buffer:
    """The stream's bytes from ``base`` (an offset into the stream) on."""

    def __init__(self, blocks: Iterable[bytes]) -> None:
        self._blocks = iter(blocks)
        self.data = bytearray()
        self.base = 0
        self.ended = False

    @property
    def end(self) -> int:
        return self.base + len(self.data)

    def fill_to(self, offset: int) -> None:
        """Read until the stream holds ``offset`` bytes or has ended."""
        while self.end < offset and not self.ended:
            block = next(self._blocks, None)
            if block is None:
                self.ended = True
            else:
                self.data += block

    def take(self, start: int, stop: int) -> bytes:
        return bytes(self.data[start - self.base : stop - self.base])

    def drop_to(self, offset: int) -> None:
        del self.data[: offset - self.base]
        self.base = offset

    def rest(self) -> bytes:
        self.fill_to(1 << 62)
        return bytes(self.data)


def _find_key(buf: _Buffer) -> int:
    """The stream offset of the first ``"traceEvents"``, or -1 when the stream has none."""
    searched = 0
    while True:
        found = buf.data.find(_KEY, max(0, searched - len(_KEY)))
        if found != -1 or buf.ended:
            return found
        searched = len(buf.data)
        buf.fill_to(buf.end + 1)


def _next_cut(buf: _Buffer, target: int, chunk_bytes: int) -> int | None:
    """The first boundary in ``[target, target + window)``, as ``decode`` rules: None when
    the stream ends within a quarter chunk of ``target`` or the window holds none."""
    buf.fill_to(target + max(SEARCH_WINDOW_BYTES, chunk_bytes // 4 + 1))
    if not target < buf.end - chunk_bytes // 4:
        return None
    window_end = min(buf.end, target + SEARCH_WINDOW_BYTES) - buf.base
    found = EVENT_START.search(buf.data, target - buf.base, window_end)
    return None if found is None else buf.base + found.start(1)


def cut_stream(blocks: Iterable[bytes], chunk_bytes: int) -> Iterator[tuple[PieceKind, bytes]]:
    """The pieces of the document the blocks spell (module doc)."""
    buf = _Buffer(blocks)
    buf.fill_to(4096)
    start = _find_key(buf) if _OBJECT_START.match(buf.data) else -1
    cuts: list[int] = []
    if start != -1:
        while (cut := _next_cut(buf, (cuts[-1] if cuts else start) + chunk_bytes,
                                chunk_bytes)) is not None:
            if cuts:
                yield "middle", buf.take(cuts[-1], cut)
                buf.drop_to(cut)
            else:
                yield "head", buf.take(0, cut)
            cuts.append(cut)
    if len(cuts) < 2:
        yield "whole", buf.rest()  # nothing was dropped: the buffer holds it all
        return
    yield "tail", buf.rest()
