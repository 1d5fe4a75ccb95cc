"""The fast paths of the analyses answer exactly what the plain pandas forms answer."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from autoprof.analysis._stats import factorized, isin_mask, name_matches

VALUES = ["cpu", "gpu", None, "cpu", "", "Trace", "gpu", None]


@pytest.mark.parametrize("dtype", ["str", object, "category"])
def test_isin_mask_is_pandas_isin(dtype: object) -> None:
    s = pd.Series(VALUES, dtype=dtype)  # type: ignore[call-overload]
    for wanted in (["cpu"], ["gpu", "Trace"], [""], []):
        assert isin_mask(s, wanted).tolist() == s.isin(wanted).to_numpy(dtype=bool).tolist()


def test_name_matches_on_arrow_and_object_columns() -> None:
    pattern = re.compile(r"^ProfilerStep#\d+$")
    names = ["ProfilerStep#1", "aten::mm", "ProfilerStep#2", None, "ProfilerStep#x"]
    expected = [True, False, True, False, False]
    for dtype in ("str", object):
        s = pd.Series(names, dtype=dtype)  # type: ignore[call-overload]
        assert name_matches(s, pattern).tolist() == expected


def test_factorized_follows_a_reassigned_column() -> None:
    df = pd.DataFrame({"lane": pd.Series(["cpu", "gpu", "cpu"], dtype="str")})
    first = isin_mask(df["lane"], ["cpu"]).tolist()
    assert first == [True, False, True]
    df["lane"] = pd.Series(["gpu", "gpu", "cpu"], dtype="str")
    assert isin_mask(df["lane"], ["cpu"]).tolist() == [False, False, True]
    df.loc[0, "lane"] = "cpu"  # in-place set: new Arrow data underneath
    assert isin_mask(df["lane"], ["cpu"]).tolist() == [True, False, True]


def test_factorized_is_read_only_and_matches_pd_factorize() -> None:
    s = pd.Series(["b", "a", None, "b"], dtype="str")
    codes, uniques = factorized(s)
    ref_codes, ref_uniques = pd.factorize(s, use_na_sentinel=False)
    assert codes.tolist() == ref_codes.tolist()
    assert [u if isinstance(u, str) else None for u in uniques] == [
        u if isinstance(u, str) else None for u in np.asarray(ref_uniques, dtype=object)]
    with pytest.raises(ValueError):
        codes[0] = 5
