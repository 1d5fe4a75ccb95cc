"""Interner.encode_raw: the codes of raw JSON texts, one join and split per chunk, and value
by value where a text holds the separator (a NUL byte) itself."""

from __future__ import annotations

import msgspec

from autoprof.analysis.loader.columns import Interner


def _by_bytes(raws: list[msgspec.Raw]) -> tuple[list[int], list[object]]:
    interner = Interner(b"")
    codes = interner.encode(map(bytes, raws), len(raws)).tolist()
    return codes, interner.values()


def test_codes_and_values_match_bytes_one_by_one() -> None:
    texts = [b"[[64, 256], []]", b"", b'["float"]', b"[[64, 256], []]", b"", b'[""]']
    raws = [msgspec.Raw(t) for t in texts]
    interner = Interner(b"")
    assert (interner.encode_raw(raws).tolist(), interner.values()) == _by_bytes(raws)
    assert interner.values() == [b"", b"[[64, 256], []]", b'["float"]', b'[""]']


def test_a_text_holding_a_nul_is_read_value_by_value() -> None:
    raws = [msgspec.Raw(b'"a\x00b"'), msgspec.Raw(b"[1]"), msgspec.Raw(b'"a\x00b"')]
    interner = Interner(b"")
    assert interner.encode_raw(raws).tolist() == [1, 2, 1]
    assert interner.values() == [b"", b'"a\x00b"', b"[1]"]


def test_no_values_give_no_codes() -> None:
    interner = Interner(b"")
    assert interner.encode_raw([]).tolist() == []
    assert interner.values() == [b""]


def test_codes_continue_across_chunks() -> None:
    interner = Interner(b"")
    interner.encode_raw([msgspec.Raw(b"[1]")])
    assert interner.encode_raw([msgspec.Raw(b"[2]"), msgspec.Raw(b"[1]")]).tolist() == [2, 1]
