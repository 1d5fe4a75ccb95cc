"""Each event's ``(ph, cat, name, pid, tid)`` read in one pass, as one code per event.

A trace has few distinct such keys (its names times its threads: hundreds, against a
million events), so one dictionary lookup of the key tuple per event, and the five columns
by indexing small per-key tables, cost about two thirds of five passes over the events
(one lookup or read per field and event): the decode's largest share after msgspec itself.

The ph, cat and name codes are the builder's interners' (``columns.Interner``): a key's
values are interned when the key is first met, keys in order of first appearance, so each
value gets the code it would get interned event by event. pid and tid go through
``columns._ids`` on the distinct values of the chunk: it maps each value on its own, once
it has chosen, from the set of values, whether every value converts as it is, so the
chunk's distinct values give each event the id its chunk's full list would.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

Key = tuple[Any, Any, Any, Any, Any]
IntArray = npt.NDArray[np.int64]
Int32Array = npt.NDArray[np.int32]


class _KeyCodes(dict[Key, int]):
    """key -> dense code; a new key gets the next code on first lookup."""

    def __missing__(self, key: Key) -> int:
        code = self[key] = len(self)
        return code


class EventKeys:
    """The keys met so far, their codes, and per key its ph, cat and name codes."""

    def __init__(self) -> None:
        self.codes = _KeyCodes()
        self._keys: list[Key] = []
        self._fields = np.empty((3, 0), dtype=np.int32)  # ph, cat, name codes, per key

    def encode(self, events: Sequence[Any], phs: dict[Any, int], cats: dict[Any, int],
               names: dict[Any, int], ids: Callable[[list[Any]], IntArray]
               ) -> tuple[Int32Array, Int32Array, Int32Array, IntArray, IntArray]:
        """The ph, cat and name codes (in ``phs``, ``cats``, ``names``, which grow) and the
        pid and tid ids (``ids``) of ``events``."""
        codes = self.codes
        key_codes = np.fromiter([codes[(e.ph, e.cat, e.name, e.pid, e.tid)] for e in events],
                                dtype=np.int32, count=len(events))
        if len(codes) > len(self._keys):
            fresh = list(codes)[len(self._keys):]  # in order of first appearance
            self._keys.extend(fresh)
            added = np.array([(phs[k[0]], cats[k[1]], names[k[2]]) for k in fresh],
                             dtype=np.int32).reshape(-1, 3)
            self._fields = np.concatenate([self._fields, added.T], axis=1)
        ph, cat, name = self._fields  # one take of a row each: ~4x faster than rows of 3
        used = np.flatnonzero(np.bincount(key_codes, minlength=len(self._keys))).tolist()
        keys = self._keys
        pid_of = np.zeros(len(keys), dtype=np.int64)
        pid_of[used] = ids([keys[i][3] for i in used])
        tid_of = np.zeros(len(keys), dtype=np.int64)
        tid_of[used] = ids([keys[i][4] for i in used])
        return (ph.take(key_codes), cat.take(key_codes), name.take(key_codes),
                pid_of.take(key_codes), tid_of.take(key_codes))
