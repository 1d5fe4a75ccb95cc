"""The merged all-ranks table: one concatenation in rank order when each trace is one rank.

The loader's per-trace tables are each sorted by ts and hold one rank; their concatenation
in rank order is already the (rank, ts) order, so the merge recodes the text columns onto
the union of their categories and shifts the row references, without the copy, the object
strings and the sort of the general path. It must give the general path's table exactly.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from autoprof.analysis.loader import merge
from autoprof.analysis.loader.inputs import resolve_source
from autoprof.analysis.loader.load import _load_one, _rank_of

RUNS = sorted((Path(__file__).resolve().parents[2] / "data" / "gpu_h200_x2" / "runs")
              .glob("ddp_*/*/"))


def _frames(run: Path) -> list[pd.DataFrame]:
    source = resolve_source(run)
    frames = []
    for trace in source.traces:
        loaded = _load_one(trace, None)
        rank = _rank_of(trace, loaded.metadata, source)
        frames.append(loaded.events.assign(rank=np.full(len(loaded.events), rank,
                                                        dtype=np.int64)))
    return frames


def _general(frames: list[pd.DataFrame], monkeypatch: pytest.MonkeyPatch) -> pd.DataFrame:
    with monkeypatch.context() as patch:
        patch.setattr(merge, "_one_rank_each", lambda frames: None)
        return merge.combine(frames)


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.parent.name)
def test_rank_order_concat_equals_the_general_merge(run: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    frames = _frames(run)
    assert merge._one_rank_each(frames) is not None
    differ = not frames[0]["name"].cat.categories.equals(frames[1]["name"].cat.categories)
    fast = merge.combine(frames[::-1])  # the traces' order does not matter
    pd.testing.assert_frame_equal(fast, _general(frames, monkeypatch), check_exact=True)
    assert isinstance(fast["name"].dtype, pd.CategoricalDtype)
    if differ:  # ranks with other names still share one dictionary, not object strings
        assert set(fast["name"].cat.categories) == (
            set(frames[0]["name"].cat.categories) | set(frames[1]["name"].cat.categories))


def test_two_traces_of_one_rank_take_the_general_path(monkeypatch: pytest.MonkeyPatch) -> None:
    frames = _frames(RUNS[0])
    rank = int(frames[0]["rank"].iloc[0])
    same = [frames[0], frames[1].assign(rank=np.full(len(frames[1]), rank, dtype=np.int64))]
    assert merge._one_rank_each(same) is None
    merged = merge.combine(same)
    assert (np.diff(merged["ts_us"].to_numpy()) >= 0).all()
