"""as_shown.py's pairing (tests/support/truth_pairs.py): which measured fix a shown opportunity
is held against. Its table
over every truth set is `results/as_shown.json` (`python -m benchmarks.validation --tables
as_shown`)."""

from __future__ import annotations

import pytest
from support.truth_pairs import measured_by_named

from benchmarks.validation.sets import truth_sets


def test_a_shown_graph_pairs_with_the_sync_free_graph_only_where_no_plain_one_was_timed() -> None:
    by_named = measured_by_named(["cuda_graph", "graph_without_sync"])
    assert by_named["cuda-graph"] == ["cuda_graph"]
    assert measured_by_named(["graph_without_sync"])["cuda-graph"] == [
        "graph_without_sync"]


def test_every_truth_set_is_found_in_order_and_a_wrong_name_is_named() -> None:
    names = [p.name for p in truth_sets()]
    assert names.index("gpu_h200_truth_heldout2") < names.index("gpu_h200_truth_heldout10")
    assert len(names) == len(set(names))
    with pytest.raises(SystemExit, match="no_such_set"):
        truth_sets(["no_such_set"])
