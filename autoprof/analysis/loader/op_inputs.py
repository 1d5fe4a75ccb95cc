"""A chunk's CPU ops' input dims, types and concrete inputs as codes, one lookup per op.

An op's three texts (raw JSON, ``msgspec.Raw``) read as one key, ``dims NUL types NUL
values``: the chunk's texts are joined in one ``bytes.join``, with NUL between an op's texts
and NUL ``\\x01`` NUL between two ops, split at the latter, and each op's key is looked up
once. The three interners looked each text up on their own before (three joins, three splits
and three lookups an op: a quarter of the columns' time on a CPU-op-heavy trace). A trace has
few distinct triples (its ops' shapes); a new one is split into its three texts, interned in
the order the ops meet them, so each text gets the code ``Interner.encode_raw`` would give it,
chunk by chunk.

A text holding a NUL or a ``\\x01`` byte itself (JSON has neither outside a string, and
msgspec none inside one unless ``strict=False`` lets a raw control character through) would
make the keys ambiguous: the joined bytes then hold more of them than the separators, and the
chunk's texts are interned one interner at a time instead (``Interner.encode_raw``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from autoprof.analysis.loader.columns import Interner

Int32Array = npt.NDArray[np.int32]
_NUL = b"\x00"
_OP_MARK = b"\x01"  # joined between two ops' texts: NUL, the mark, NUL
_OP_SEP = _NUL + _OP_MARK + _NUL


class _TripleCodes(dict[bytes, int]):
    """joined triple -> dense code; a new triple gets the next code on first lookup."""

    def __missing__(self, key: bytes) -> int:
        code = self[key] = len(self)
        return code


class OpInputs:
    """The triples met so far, their codes, and per triple its dims, types, values codes."""

    def __init__(self) -> None:
        self.codes = _TripleCodes()
        self._fields = np.empty((3, 0), dtype=np.int32)  # dims, types, values codes

    def encode(self, op_args: list[Any], dims: Interner, types: Interner, values: Interner
               ) -> tuple[Int32Array, Int32Array, Int32Array]:
        """The dims, types and values codes (in the three interners, which grow) of the
        ``args`` of ``op_args`` (``input_dims``, ``input_types``, ``input_values``)."""
        n = len(op_args)
        if not n:
            empty = np.empty(0, dtype=np.int32)
            return empty, empty.copy(), empty.copy()
        parts: list[Any] = [_OP_MARK] * (4 * n - 1)
        parts[0::4] = [a.input_dims for a in op_args]
        parts[1::4] = [a.input_types for a in op_args]
        parts[2::4] = [a.input_values for a in op_args]
        joined = _NUL.join(parts)
        del parts
        if joined.count(_OP_MARK) != n - 1 or joined.count(_NUL) != 4 * n - 2:
            return (dims.encode_raw([a.input_dims for a in op_args]),
                    types.encode_raw([a.input_types for a in op_args]),
                    values.encode_raw([a.input_values for a in op_args]))
        keys = joined.split(_OP_SEP)
        del joined
        codes = self.codes
        known = len(codes)
        key_codes = np.fromiter([codes[k] for k in keys], dtype=np.int32, count=n)
        if len(codes) > known:
            fresh = list(codes)[known:]  # in order of first appearance
            added = np.array([_triple(k, dims, types, values) for k in fresh],
                             dtype=np.int32).reshape(-1, 3)
            self._fields = np.concatenate([self._fields, added.T], axis=1)
        dims_of, types_of, values_of = self._fields
        return dims_of.take(key_codes), types_of.take(key_codes), values_of.take(key_codes)


def _triple(key: bytes, dims: Interner, types: Interner, values: Interner
            ) -> tuple[int, int, int]:
    d, t, v = key.split(_NUL)
    return dims.codes[d], types.codes[t], values.codes[v]
