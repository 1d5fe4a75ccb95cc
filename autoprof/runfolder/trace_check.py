"""Is a cycle's plain trace usable? One JSON object with a ``traceEvents`` list, checked in
bounded memory.

The finisher checks each trace before it compresses it; ``json.load`` of a whole trace
would hold it several times over in memory (a 2 GB trace is tens of GB of Python objects).
This reads the file in chunks and decodes one top-level value, or one trace event, at a time
(``json.JSONDecoder.raw_decode``), so memory stays near the largest single event. It accepts
what ``json.loads`` accepts (NaN and Infinity literals, the last of two equal keys wins).
No torch, no third-party parser.
"""

from __future__ import annotations

import codecs
import json
from pathlib import Path
from typing import IO, Any

CHUNK_BYTES = 1 << 20
MAX_VALUE_CHARS = 64 << 20  # one top-level value or one event larger than this is refused
_WS = " \t\n\r"


class _Stream:
    """A window on the file's text: ``buf[pos:]`` is what has not been read yet."""

    def __init__(self, fh: IO[bytes]) -> None:
        self.fh = fh
        self.decoder = codecs.getincrementaldecoder("utf-8")("surrogatepass")
        self.json = json.JSONDecoder()
        self.buf = ""
        self.pos = 0
        self.base = 0  # characters dropped before buf[0] (for error offsets)
        self.eof = False

    def fill(self) -> None:
        data = self.fh.read(CHUNK_BYTES)
        self.eof = not data
        self.base += self.pos
        self.buf = self.buf[self.pos:] + self.decoder.decode(data, final=self.eof)
        self.pos = 0

    def peek(self) -> str:
        """The next character that is not whitespace ("" at the end of the file)."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in _WS:
                self.pos += 1
            if self.pos < len(self.buf) or self.eof:
                return self.buf[self.pos:self.pos + 1]
            self.fill()

    def take(self, allowed: str) -> str:
        char = self.peek()
        if not char or char not in allowed:
            found = repr(char) if char else "the end of the file"
            raise ValueError(f"expecting one of {allowed!r} at character "
                             f"{self.base + self.pos}, found {found}")
        self.pos += 1
        return char

    def value(self) -> Any:
        """Decode the next JSON value, reading more of the file until it is whole."""
        self.peek()
        while True:
            try:
                value, end = self.json.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                if self.eof:
                    raise ValueError(f"{exc.msg} at character {self.base + exc.pos}") from None
                if len(self.buf) - self.pos > MAX_VALUE_CHARS:
                    raise ValueError(f"a value at character {self.base + self.pos} is longer "
                                     f"than {MAX_VALUE_CHARS} characters") from None
                self.fill()
                continue
            if end == len(self.buf) and not self.eof:  # a number may go on in the next chunk
                self.fill()
                continue
            self.pos = end
            return value


def _events(stream: _Stream) -> None:
    """Read a list of events, one at a time (the ``[`` already taken)."""
    if stream.peek() == "]":
        stream.pos += 1
        return
    while True:
        stream.value()
        if stream.take(",]") == "]":
            return


def _check(stream: _Stream) -> bool:
    """Read one JSON object; whether its (last) ``traceEvents`` is a list."""
    stream.take("{")
    events_listed = False
    if stream.peek() == "}":
        stream.pos += 1
        return False
    while True:
        key = stream.value()
        if not isinstance(key, str):
            raise ValueError(f"an object key is a {type(key).__name__}, not a string")
        stream.take(":")
        if key == "traceEvents" and stream.peek() == "[":
            stream.pos += 1
            _events(stream)
            events_listed = True
        else:
            stream.value()
            events_listed = events_listed and key != "traceEvents"
        if stream.take(",}") == "}":
            return events_listed


def check_trace(path: Path, name: str | None = None) -> None:
    """Raise ValueError (naming the trace) unless the file at ``path`` is one JSON object
    with a ``traceEvents`` list; OSError when it cannot be read."""
    name = name or path.name
    with path.open("rb") as fh:
        stream = _Stream(fh)
        try:
            if stream.peek() == "{":
                listed = _check(stream)
            else:  # valid JSON, perhaps, but not an object: no traceEvents list
                stream.value()
                listed = False
            if stream.peek():
                raise ValueError(f"extra data at character {stream.base + stream.pos}")
        except (ValueError, RecursionError) as exc:
            raise ValueError(f"{name} is not valid JSON ({exc}); the recording was cut short "
                             "or the profiler wrote a label it did not escape") from None
    if not listed:
        raise ValueError(f"{name} has no traceEvents list")

