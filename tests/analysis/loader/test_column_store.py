"""The column store holds what concatenating the chunks' columns would, however they arrive."""

from __future__ import annotations

import numpy as np
import pytest

from autoprof.analysis.loader import column_store
from autoprof.analysis.loader.column_store import ColumnStore


def _chunk(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    return {"ts": rng.normal(size=n), "pid": rng.integers(-2**40, 2**40, size=n),
            "name": rng.integers(0, 500, size=n).astype(np.int32)}


@pytest.mark.parametrize("sizes", [[1], [3, 0, 5], [4000] * 30, [70_000, 1, 130_000]])
def test_appended_chunks_equal_their_concatenation(sizes: list[int]) -> None:
    rng = np.random.default_rng(len(sizes))
    chunks = [_chunk(rng, n) for n in sizes]
    expected = {k: np.concatenate([c[k] for c in chunks]) for k in chunks[0]}
    store = ColumnStore()
    for chunk in chunks:
        store.append(chunk)
        assert chunk == {}  # the chunk's arrays are the store's to free
    got = store.take()
    assert store.rows == 0
    for key, values in expected.items():
        assert got[key].dtype == values.dtype
        np.testing.assert_array_equal(got[key], values)


def test_a_column_grows_past_many_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(column_store, "MIN_BYTES", 64)
    rng = np.random.default_rng(3)
    parts = [rng.normal(size=n) for n in (5, 9, 100, 1, 1000, 3)]
    store = ColumnStore()
    for part in parts:
        store.append({"ts": part.copy()})
    np.testing.assert_array_equal(store.take()["ts"], np.concatenate(parts))


def test_a_wider_dtype_later_widens_the_rows_before() -> None:
    store = ColumnStore()
    store.append({"code": np.array([1, 2], dtype=np.int32)})
    store.append({"code": np.array([2**40], dtype=np.int64)})
    got = store.take()["code"]
    assert got.dtype == np.int64
    assert got.tolist() == [1, 2, 2**40]


def test_nothing_appended_gives_no_columns_and_empty_chunks_add_no_rows() -> None:
    assert ColumnStore().take() == {}
    store = ColumnStore()
    store.append({})
    store.append({"ts": np.empty(0)})
    got = store.take()
    assert list(got) == ["ts"] and len(got["ts"]) == 0


def test_chunks_with_other_columns_or_ragged_lengths_are_refused() -> None:
    store = ColumnStore()
    store.append({"ts": np.zeros(2)})
    with pytest.raises(ValueError, match="differ"):
        store.append({"dur": np.zeros(2)})
    with pytest.raises(ValueError, match="rows"):
        ColumnStore().append({"ts": np.zeros(2), "dur": np.zeros(3)})
