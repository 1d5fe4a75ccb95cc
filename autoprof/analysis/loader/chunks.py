"""Cutting a stream of a Kineto JSON trace's bytes into pieces that decode on their own.

``}``, ``,``, ``{`` and a trace event's first key (``"ph"``, ``"name"``, ...) with only
whitespace between them is a candidate boundary between two ``traceEvents`` entries, in
Kineto's indented layout and in compact one-line JSON alike. ``cut_stream`` looks for one
about every ``chunk_bytes`` after the ``"traceEvents"`` key, as the blocks arrive, and yields:

- ``("head", bytes)`` once, at the first cut: everything before it (the top-level keys that
  come first, the list's opening and its first events);
- ``("middle", memoryview)`` for each stretch between two cuts (events, each followed by its
  comma), as soon as the next cut is found: a view of the block it lies in (a copy only
  when it straddles two), which its decode copies once, into a JSON list;
- ``("tail", bytes)`` at the end: everything from the last cut (the last events, the list's
  close and the top-level keys that come after it);
- or ``("whole", bytes)`` alone, the whole document, when it starts with no ``{``, holds no
  ``"traceEvents"`` key or offers fewer than two cuts: it is then decoded in one piece.

At most about two chunks plus one block of the stream are read ahead at a time (the head, the
bytes since the last cut, the block just read), whatever the file's size; the blocks are kept
as they were read, each until the cuts have passed its end (one more block at most). Where
the cuts fall does not depend on the block size: a cut is looked for only once the stream
holds the whole window it is looked for in (or has ended).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Literal

PieceKind = Literal["head", "middle", "tail", "whole"]
Piece = bytes | memoryview  # a memoryview for "middle" pieces, bytes for the others

# "}" "," "{" between two traceEvents entries, the "{" followed by a trace event's key; the
# whitespace covers Kineto's one-key-per-line layout and compact one-line JSON alike
EVENT_START = re.compile(rb'\}\s*,\s*(\{)\s*"(?:ph|cat|name|pid|tid|ts|dur|args|id)"')
SEARCH_WINDOW_BYTES = 1024**2
_KEY = b'"traceEvents"'
_OBJECT_START = re.compile(rb"[ \t\r\n]*\{")


class _Buffer:
    """The stream's bytes from ``base`` (an offset into the stream) on, held as the blocks
    they arrived in: a piece or a search window inside one block is read from that block,
    and only one that straddles two blocks is copied together. (Appending each block to one
    growing ``bytearray`` whose front is dropped made the interpreter move it to fresh memory
    at almost every block: a copy and new pages for every block read.)"""

    def __init__(self, blocks: Iterable[bytes]) -> None:
        self._blocks = iter(blocks)
        self._parts: list[bytes] = []  # consecutive blocks, the first from ``_first``
        self._first = 0
        self._held = 0  # bytes in ``_parts``
        self.base = 0
        self.ended = False

    @property
    def end(self) -> int:
        return self._first + self._held

    def fill_to(self, offset: int) -> None:
        """Read until the stream holds ``offset`` bytes or has ended."""
        while self.end < offset and not self.ended:
            block = next(self._blocks, None)
            if block is None:
                self.ended = True
            elif block:
                self._parts.append(block)
                self._held += len(block)

    def view(self, start: int, stop: int) -> tuple[bytes, int]:
        """Bytes holding the stream's ``[start, stop)`` (``start >= base``, ``stop <= end``)
        and where ``start`` lies in them: a held block itself when one holds the range,
        else a copy of the range."""
        index, at = self._locate(start)
        part = self._parts[index] if index < len(self._parts) else b""
        if stop <= start - at + len(part):
            return part, at
        return self._joined(index, start - at, start, stop), 0

    def within(self, start: int, stop: int) -> tuple[bytes, int, int]:
        """The held block where the stream's offset ``start`` lies, where in it, and the
        stream offset up to which it holds ``[start, stop)`` (``stop`` when all of it)."""
        index, at = self._locate(start)
        if index == len(self._parts):
            return b"", 0, start
        part = self._parts[index]
        return part, at, min(stop, start - at + len(part))

    def _locate(self, offset: int) -> tuple[int, int]:
        """The index of the held block holding the stream's ``offset`` (``len(parts)`` when
        none does) and where in it the offset lies."""
        at = self._first
        for index, part in enumerate(self._parts):
            if offset < at + len(part):
                return index, offset - at
            at += len(part)
        return len(self._parts), 0

    def _joined(self, index: int, at: int, start: int, stop: int) -> bytes:
        views = []  # joined straight from the blocks: one copy
        for part in self._parts[index:]:
            if at >= stop:
                break
            views.append(memoryview(part)[max(start - at, 0) : min(stop - at, len(part))])
            at += len(part)
        joined = b"".join(views)
        for view in views:
            view.release()
        return joined

    def take(self, start: int, stop: int) -> bytes:
        data, at = self.view(start, stop)
        if at == 0 and len(data) == stop - start:
            return data
        # through a view: one copy (a slice of the block would be a copy to copy again)
        with memoryview(data) as whole:
            return whole[at : at + stop - start].tobytes()

    def take_view(self, start: int, stop: int) -> memoryview:
        """The stream's ``[start, stop)`` as a view of the block holding it (the view keeps
        the block alive), or of a copy when it straddles two blocks."""
        data, at = self.view(start, stop)
        return memoryview(data)[at : at + stop - start]

    def drop_to(self, offset: int) -> None:
        """Forget the bytes before ``offset`` (the blocks that end before it)."""
        self.base = offset
        while self._parts and self._first + len(self._parts[0]) <= offset:
            self._first += len(self._parts[0])
            self._held -= len(self._parts[0])
            del self._parts[0]

    def rest(self) -> bytes:
        self.fill_to(1 << 62)
        return self.take(self.base, self.end) if self.end > self.base else b""


def _find_key(buf: _Buffer) -> int:
    """The stream offset of the first ``"traceEvents"``, or -1 when the stream has none."""
    searched = 0
    while True:
        begin = max(0, searched - len(_KEY))  # each block searched once, with its seam
        data, at = buf.view(begin, buf.end)
        found = data.find(_KEY, at, at + buf.end - begin)
        if found != -1:
            return begin + found - at
        if buf.ended:
            return -1
        searched = buf.end
        buf.fill_to(buf.end + 1)


def _next_cut(buf: _Buffer, target: int, chunk_bytes: int) -> int | None:
    """The first boundary in ``[target, target + window)``, as ``decode`` rules: None when
    the stream ends within a quarter chunk of ``target`` or the window holds none."""
    buf.fill_to(target + max(SEARCH_WINDOW_BYTES, chunk_bytes // 4 + 1))
    if not target < buf.end - chunk_bytes // 4:
        return None
    window_end = min(buf.end, target + SEARCH_WINDOW_BYTES)
    # the block holding the window's start first: a match found there is the window's first
    # (two matches never overlap), so the window is copied together only when that block
    # ends inside it without one
    data, at, until = buf.within(target, window_end)
    found = EVENT_START.search(data, at, at + until - target)
    if found is None and until < window_end:
        data, at = buf.view(target, window_end)
        found = EVENT_START.search(data, at, at + window_end - target)
    return None if found is None else target + found.start(1) - at


def cut_stream(blocks: Iterable[bytes], chunk_bytes: int) -> Iterator[tuple[PieceKind, Piece]]:
    """The pieces of the document the blocks spell (module doc)."""
    buf = _Buffer(blocks)
    buf.fill_to(4096)
    opening, at = buf.view(0, buf.end)
    start = _find_key(buf) if _OBJECT_START.match(opening, at) else -1
    cuts: list[int] = []
    if start != -1:
        for cut in _cuts(buf, start, chunk_bytes):
            if cuts:
                yield "middle", buf.take_view(cuts[-1], cut)
                buf.drop_to(cut)
            else:
                yield "head", buf.take(0, cut)
            cuts.append(cut)
    if len(cuts) < 2:
        yield "whole", buf.rest()  # nothing was dropped: the buffer holds it all
        return
    yield "tail", buf.rest()


def cut_events(blocks: Iterable[bytes], chunk_bytes: int) -> Iterator[tuple[PieceKind, Piece]]:
    """The pieces of a stream that starts at a cut (a boundary between two events, found
    by ``EVENT_START``): ``("middle", memoryview)`` for each stretch up to the next cut, then
    ``("tail", bytes)``, the rest (the last events and whatever ends the document)."""
    buf = _Buffer(blocks)
    last = 0
    for cut in _cuts(buf, 0, chunk_bytes):
        yield "middle", buf.take_view(last, cut)
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
