"""EventKeys: the (ph, cat, name, pid, tid) columns from one key per event are those read
field by field (each value interned on first sight, each chunk's ids through ``_ids``)."""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from autoprof.analysis.loader.columns import Interner, _ids
from autoprof.analysis.loader.event_keys import EventKeys
from autoprof.analysis.loader.schema import Event

_IDS: list[int | str] = [0, 7, 4242, -1, 2**62, -(2**62), 2**62 - 1, 2**63 - 1, "123", "Traces",
                         "Trace PyTorch Profiler", " 9", "1e3", ""]


def _field_by_field(chunks: list[list[Event]]) -> tuple[list[np.ndarray], list[list[Any]]]:
    phs, cats, names = Interner(), Interner(), Interner()
    columns: list[np.ndarray] = []
    for events in chunks:
        columns += [
            np.array([phs.codes[e.ph] for e in events], dtype=np.int32),
            np.array([cats.codes[e.cat] for e in events], dtype=np.int32),
            np.array([names.codes[e.name] for e in events], dtype=np.int32),
            _ids([e.pid for e in events]),
            _ids([e.tid for e in events]),
        ]
    return columns, [phs.values(), cats.values(), names.values()]


def _by_keys(chunks: list[list[Event]]) -> tuple[list[np.ndarray], list[list[Any]]]:
    phs, cats, names = Interner(), Interner(), Interner()
    keys = EventKeys()
    columns: list[np.ndarray] = []
    for events in chunks:
        columns += keys.encode(events, phs.codes, cats.codes, names.codes, _ids)
    return columns, [phs.values(), cats.values(), names.values()]


def _chunks(seed: int, odd_ids: bool) -> list[list[Event]]:
    rng = random.Random(seed)
    ids = _IDS if odd_ids else [v for v in _IDS if isinstance(v, int) and abs(v) < 2**62]
    chunks = []
    for _ in range(rng.randint(1, 4)):
        chunks.append([
            Event(ph=rng.choice("XsfMi"), cat=rng.choice(["cpu_op", "kernel", "", "ac2g"]),
                  name=rng.choice(["aten::mm", "gemm", "", "ProfilerStep#1", "é"]),
                  pid=rng.choice(ids[: rng.randint(1, len(ids))]), tid=rng.choice(ids))
            for _ in range(rng.randint(1, 60))
        ])
    return chunks


def test_keys_give_the_columns_and_values_read_field_by_field() -> None:
    for seed in range(200):
        chunks = _chunks(seed, odd_ids=seed % 2 == 0)
        got, got_values = _by_keys(chunks)
        want, want_values = _field_by_field(chunks)
        assert got_values == want_values, seed
        assert len(got) == len(want)
        for a, b in zip(got, want, strict=True):
            assert a.dtype == b.dtype, seed
            assert a.tolist() == b.tolist(), seed


def test_a_chunk_of_plain_ints_keeps_ids_beyond_the_limit_as_they_are() -> None:
    # a chunk whose ids all convert is read as it is (``_ids``' fast path), one with a
    # string id goes value by value (ids beyond 2**62 read as none): keys decide per chunk
    plain = [Event(ph="X", pid=2**62, tid=1)]
    mixed = [Event(ph="X", pid=2**62, tid=1), Event(ph="X", pid="Traces", tid=1)]
    got, _ = _by_keys([plain, mixed])
    assert got[3].tolist() == [2**62]
    assert got[8].tolist()[0] == -1
