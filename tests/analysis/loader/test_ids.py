"""The loader's id columns (pid, tid, flow and correlation ids): a chunk whose ids are ints
but for a few strings reads those few through ``id_or_none`` and the rest at C speed, with
the values ``id_or_none`` gives each one (strings a stable negative, ints outside
(-2**62, 2**62) none, that is -1)."""

from __future__ import annotations

import random
from typing import Any

from autoprof.analysis.loader.columns import _ids, id_or_none, stable_negative_id

_ODD: list[Any] = [0, 7, -3, 2**62, 2**62 - 1, -(2**62), -(2**62) + 1, 2**63 - 1, -(2**63),
                   2**63, -(2**63) - 1, 10**30, "Traces", "", "stream 7", True, False]


def _one_by_one(values: list[Any]) -> list[int]:
    found = [id_or_none(v) for v in values]
    return [-1 if v is None else v for v in found]


def test_a_few_string_ids_among_ints() -> None:
    values: list[Any] = [*range(1000), "Traces", 5, "Trace PyTorch Profiler"]
    out = _ids(values)
    assert out.dtype.name == "int64"
    assert out[:1000].tolist() == list(range(1000))
    assert out[1000] == stable_negative_id("Traces") < 0
    assert out[1002] == stable_negative_id("Trace PyTorch Profiler")


def test_mixed_ids_match_id_or_none_value_by_value() -> None:
    rng = random.Random(0)
    for _ in range(3000):
        values = [rng.choice(_ODD) for _ in range(rng.randint(1, 8))]
        if not any(isinstance(v, str) or not -(2**63) <= v < 2**63 for v in values):
            continue  # all ints of int64 (bools too): read as they are, the plain path
        assert _ids(values).tolist() == _one_by_one(values), values


def test_ints_only_are_read_as_they_are() -> None:
    assert _ids([1, 2**62, -5]).tolist() == [1, 2**62, -5]
