"""The decoded chunks' columns, appended into one growing block of memory a column as they
arrive.

Each chunk of about 3,700 events gives a few dozen small arrays. Kept until the end and
concatenated there, they and the whole columns were in memory together (twice the columns
at the decode's peak), and once freed they stayed in the process as heap the C allocator
could not give back (live blocks between them): at 1M events about 80 MB more resident
after the decode than the columns themselves, there when the events table is built next.
Here each chunk's values are copied into its column's block and the chunk's arrays are
freed at once (the next chunk reuses their memory). A block is an anonymous memory map: a
page holds memory only once written (a block's unused end costs nothing), it grows in place
where the system can (Linux), and the whole block goes back to the system when its column
is freed.
"""

from __future__ import annotations

import mmap

import numpy as np

GROWTH = 2  # a full block grows to twice its size
MIN_BYTES = 1 << 17


# a private anonymous map where the platform names one: its pages fault in as cheaply as
# malloc's, and it grows in place (mremap moves the pages, copies nothing). Python's
# default anonymous map is a shared one: dearer faults, and it must not grow in place (its
# pages past the first size are not backed)
_PRIVATE = getattr(mmap, "MAP_PRIVATE", 0) | getattr(mmap, "MAP_ANONYMOUS", 0)


def _new_map(size: int) -> mmap.mmap:
    if _PRIVATE and hasattr(mmap, "MAP_ANONYMOUS"):
        return mmap.mmap(-1, size, flags=_PRIVATE)
    return mmap.mmap(-1, size)


class _Block:
    """One column's values: an anonymous map holding ``capacity`` items of ``dtype``."""

    def __init__(self, dtype: np.dtype, items: int) -> None:
        self.dtype = dtype
        self.map = _new_map(max(items * dtype.itemsize, MIN_BYTES))
        self.private = bool(_PRIVATE and hasattr(mmap, "MAP_ANONYMOUS"))

    def reserve(self, items: int) -> None:
        """Room for at least ``items`` items (the first ones kept): the map grown in place,
        else a map twice as large and a copy."""
        need = items * self.dtype.itemsize
        if need <= len(self.map):
            return
        size = max(need, int(len(self.map) * GROWTH))
        if self.private:
            try:
                self.map.resize(size)
                return
            except (OSError, SystemError, ValueError):
                pass
        grown = _new_map(size)
        grown.write(self.map)
        self.map.close()
        self.map = grown

    def put(self, at: int, values: np.ndarray) -> None:
        """``values`` written from item ``at`` on (room reserved before)."""
        window = np.frombuffer(self.map, self.dtype, count=len(values),
                               offset=at * self.dtype.itemsize)
        window[:] = values
        del window  # the map may be resized only once no array refers to it

    def widened(self, dtype: np.dtype, items: int) -> _Block:
        """A block of ``dtype`` holding this one's first ``items`` items (this one closed)."""
        wider = _Block(dtype, items)
        if items:
            old = np.frombuffer(self.map, self.dtype, count=items)
            wider.put(0, old)
            del old
        self.map.close()
        return wider

    def array(self, items: int) -> np.ndarray:
        """The first ``items`` items; the map belongs to the array from now on (the pages
        past them were never written: they hold no memory)."""
        if not items:
            self.map.close()
            return np.empty(0, dtype=self.dtype)
        return np.frombuffer(self.map, self.dtype, count=items)


class ColumnStore:
    """Columns of equal length, appended to (``append``) and taken whole once (``take``)."""

    def __init__(self) -> None:
        self._blocks: dict[str, _Block] = {}
        self.rows = 0

    def append(self, columns: dict[str, np.ndarray]) -> None:
        """Append ``columns`` (equal lengths; the same keys and dtypes every call); empties
        ``columns`` (the caller's arrays are freed here once copied)."""
        if not columns:
            return
        n = len(next(iter(columns.values())))
        if self._blocks and set(columns) != set(self._blocks):
            raise ValueError("a chunk's columns differ from the chunks' before it")
        end = self.rows + n
        for key in list(columns):
            values = columns.pop(key)
            block = self._blocks.get(key)
            if block is None:
                block = self._blocks[key] = _Block(values.dtype, max(n, 1))
            if len(values) != n:
                raise ValueError(f"column {key!r} has {len(values)} rows, not {n}")
            if values.dtype != block.dtype:  # never from the loader's encode; kept exact
                wider = np.result_type(block.dtype, values.dtype)
                block = self._blocks[key] = block.widened(wider, self.rows)
            block.reserve(end)
            block.put(self.rows, values)
            del values
        self.rows = end

    def take(self) -> dict[str, np.ndarray]:
        """The columns, each as long as the rows appended; the store is empty after."""
        out = {key: self._blocks.pop(key).array(self.rows) for key in list(self._blocks)}
        self.rows = 0
        return out
