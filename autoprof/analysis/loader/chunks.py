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
        # through a view: one copy (a bytearray slice would be a copy to copy again)
        with memoryview(self.data) as view:
            return bytes(view[start - self.base : stop - self.base])

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
        for cut in _cuts(buf, start, chunk_bytes):
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


def cut_events(blocks: Iterable[bytes], chunk_bytes: int) -> Iterator[tuple[PieceKind, bytes]]:
    """The pieces of a stream that starts at a cut (a boundary between two events, found
    by ``EVENT_START``): ``("middle", bytes)`` for each stretch up to the next cut, then
    ``("tail", bytes)``, the rest (the last events and whatever ends the document)."""
    buf = _Buffer(blocks)
    last = 0
    for cut in _cuts(buf, 0, chunk_bytes):
        yield "middle", buf.take(last, cut)
        buf.drop_to(cut)
        last = cut
    yield "tail", buf.rest()


def _cuts(buf: _Buffer, start: int, chunk_bytes: int) -> Iterator[int]:
    """The stream offsets of the cuts after ``start``, about every ``chunk_bytes``."""
    at = start
    while (cut := _next_cut(buf, at + chunk_bytes, chunk_bytes)) is not None:
        yield cut
        at = cut


def until_cut(blocks: Iterable[bytes], offset: int, found: list[int]) -> Iterator[bytes]:
    """The stream's bytes up to its first cut at or after ``offset`` (appended to
    ``found``), or all of them when the window there holds none (``found`` stays empty).
    ``from_cut`` gives the rest: both look for the cut in the same window."""
    at = 0
    rest = iter(blocks)
    window = bytearray()
    for block in rest:
        if at + len(block) <= offset:
            at += len(block)
            yield block
            continue
        if offset > at:
            yield block[:offset - at]
        window += block[max(0, offset - at):]
        break
    else:
        return  # the stream ended before the offset
    _fill(window, rest)
    cut = _window_cut(window, offset)
    if cut is None:
        yield bytes(window)
        yield from rest
        return
    found.append(cut)
    yield bytes(window[:cut - offset])


def from_cut(blocks: Iterable[bytes], offset: int, found: list[int]) -> Iterator[bytes]:
    """The bytes from the stream's first cut at or after ``offset`` on (appended to
    ``found``): ``blocks`` start at ``offset``. None when the window there holds no cut."""
    rest = iter(blocks)
    window = bytearray()
    _fill(window, rest)
    cut = _window_cut(window, offset)
    if cut is None:
        return
    found.append(cut)
    yield bytes(window[cut - offset:])
    yield from rest


def _fill(window: bytearray, rest: Iterator[bytes]) -> None:
    while len(window) < SEARCH_WINDOW_BYTES and (block := next(rest, None)) is not None:
        window += block


def _window_cut(window: bytearray, offset: int) -> int | None:
    """The first cut in the ``SEARCH_WINDOW_BYTES`` from ``offset``, as a stream offset."""
    found = EVENT_START.search(window, 0, SEARCH_WINDOW_BYTES)
    return None if found is None else offset + found.start(1)
