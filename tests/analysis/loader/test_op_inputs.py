"""OpInputs.encode: an op's dims, types and concrete inputs looked up as one key give the
codes and interned values that three ``Interner.encode_raw`` calls give, chunk by chunk, and
texts holding the separators are read one interner at a time."""

from __future__ import annotations

import msgspec

from autoprof.analysis.loader.columns import Interner
from autoprof.analysis.loader.op_inputs import OpInputs
from autoprof.analysis.loader.schema import RAW_EMPTY, Args

Triple = tuple[bytes, bytes, bytes]


def _args(triples: list[Triple]) -> list[Args]:
    return [Args(input_dims=msgspec.Raw(d) if d else RAW_EMPTY,
                 input_types=msgspec.Raw(t) if t else RAW_EMPTY,
                 input_values=msgspec.Raw(v) if v else RAW_EMPTY) for d, t, v in triples]


def _three_interners(chunks: list[list[Args]]) -> tuple[list[list[list[int]]], list[object]]:
    dims, types, values = Interner(b""), Interner(b""), Interner(b"")
    codes = [[dims.encode_raw([a.input_dims for a in c]).tolist(),
              types.encode_raw([a.input_types for a in c]).tolist(),
              values.encode_raw([a.input_values for a in c]).tolist()] for c in chunks]
    return codes, [dims.values(), types.values(), values.values()]


def _one_key(chunks: list[list[Args]]) -> tuple[list[list[list[int]]], list[object]]:
    dims, types, values = Interner(b""), Interner(b""), Interner(b"")
    inputs = OpInputs()
    codes = [[c.tolist() for c in inputs.encode(chunk, dims, types, values)]
             for chunk in chunks]
    return codes, [dims.values(), types.values(), values.values()]


def test_codes_match_three_interners_across_chunks() -> None:
    first = _args([(b"[[64, 256], []]", b'["float", ""]', b'["", ""]'),
                   (b"", b"", b""),
                   (b"[[64, 256], []]", b'["float", ""]', b'["", "2"]'),
                   (b"[[64, 256], []]", b'["float", ""]', b'["", ""]'),
                   (b"[[1]]", b"", b'["", ""]')])
    second = _args([(b"[[2]]", b'["float", ""]', b""),
                    (b"[[64, 256], []]", b'["int"]', b'["", "2"]'),
                    (b"", b"", b"")])
    got = _one_key([first, second])
    assert got == _three_interners([first, second])
    assert got[1][0] == [b"", b"[[64, 256], []]", b"[[1]]", b"[[2]]"]


def test_an_empty_text_is_not_confused_with_a_neighbour() -> None:
    # "a" then "" and "" then "a" must stay two keys
    chunk = _args([(b"[1]", b"", b"[2]"), (b"", b"[1]", b"[2]"), (b"[1]", b"[2]", b"")])
    assert _one_key([chunk]) == _three_interners([chunk])


def test_texts_holding_a_separator_are_read_one_interner_at_a_time() -> None:
    for odd in (b'"a\x00b"', b'"a\x01b"', b'"\x00\x01\x00"'):
        chunk = _args([(odd, b"[1]", b""), (b"[1]", odd, b""), (b"", b"", odd),
                       (odd, b"[1]", b"")])
        assert _one_key([chunk, chunk]) == _three_interners([chunk, chunk])


def test_no_ops_give_no_codes() -> None:
    assert _one_key([[]]) == ([[[], [], []]], [[b""], [b""], [b""]])
