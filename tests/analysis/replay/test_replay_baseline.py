"""The replay brought to the untraced pace (metrics/replay/baseline.py), the host scaled
inside or outside the call, loader workers that fetch no faster than their count allows, and
a mask index's line removed with the ops on its selection; times in microseconds."""

from __future__ import annotations

import pytest
from support.attrbuild import Trace

from autoprof.analysis.metrics.replay import (
    HideLoader,
    OverlapBetweenCalls,
    ScaleHost,
    build_graph,
    replay_step,
)
from autoprof.analysis.metrics.replay.baseline import Reference, host_baseline
from autoprof.analysis.metrics.replay.fixes import fix_changes
from autoprof.analysis.metrics.replay.loop import loop_split
from autoprof.analysis.metrics.replay.selection import selection_rows

FETCH = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def loader_loop() -> Trace:
    """Two steps: a 60 us DataLoader fetch between calls, then the call `train_step` (40 us
    of host time launching one 2 us kernel at its end)."""
    t = Trace()
    for k, at in enumerate((0.0, 100.0)):
        t.step(k + 1, at, 100).cpu(FETCH, at, 60).region("train_step", at + 60, 40) \
            .launch(at + 92, 5, at + 98, 2)
    return t


def test_the_host_scaled_inside_or_outside_the_call() -> None:
    ev = loader_loop().frame()
    assert replay_step(ev, 1).step_us == pytest.approx(100.0)
    # the call's host halved: 60 + 32 / 2 before the launch + its 5 / 2, then the kernel's
    # 1 us latency and 2 us
    assert replay_step(ev, 1, [ScaleHost(0.5, "train_step")]).step_us == pytest.approx(
        60.0 + 16.0 + 2.5 + 1.0 + 2.0, abs=0.2)
    # the loop's 60 us halved: 70 us
    assert replay_step(ev, 1, [ScaleHost(0.5, "train_step", inside=False)]).step_us == \
        pytest.approx(70.0, abs=0.5)


def test_workers_fetch_no_faster_than_their_count_allows() -> None:
    ev = loader_loop().frame()
    hidden = [OverlapBetweenCalls("train_step", keep_fetches=True)]
    assert replay_step(ev, 1, [HideLoader(), *hidden]).step_us == pytest.approx(40.0, abs=0.5)
    # one worker makes a batch in the 60 us the fetch took: the step takes 60 us
    assert replay_step(ev, 1, [HideLoader(workers=1), *hidden]).step_us == \
        pytest.approx(60.0, abs=0.5)
    # four of them: 15 us a batch, under the call's 40 us
    assert replay_step(ev, 1, [HideLoader(workers=4), *hidden]).step_us == \
        pytest.approx(40.0, abs=0.5)
    assert replay_step(ev, 1, fix_changes("loader-workers", "train_step", 2)).step_us == \
        pytest.approx(40.0, abs=0.5)


def test_a_loader_loop_scales_the_call_to_the_untraced_calls_and_keeps_the_loop() -> None:
    ev = loader_loop().frame()
    loop = loop_split(ev, "train_step")
    # the untraced call took 20 us with its closing sync: the call's 37 us of host before
    # its kernel ends at 17 us, then the kernel's 1 us latency and 2 us (no sync in the
    # trace: no wake-up); no untraced iteration
    changes = host_baseline(ev, "train_step", loop, Reference(call_us=20.0))
    assert len(changes) == 1 and isinstance(changes[0], ScaleHost)
    assert (changes[0].region, changes[0].inside) == ("train_step", True)
    assert changes[0].factor == pytest.approx(17.0 / 37.0, abs=0.01)
    # the closing sync's own 2 us timed: 15 us of host
    synced = host_baseline(ev, "train_step", loop, Reference(call_us=20.0, sync_us=2.0))
    assert synced[0].factor == pytest.approx(15.0 / 37.0, abs=0.01)
    # an untraced iteration of 140 us: the loop's 60 us take 120 (the call's 20 and the
    # kernel's tail after it stay)
    both = host_baseline(ev, "train_step", loop, Reference(call_us=20.0, step_us=140.0))
    assert isinstance(both[1], ScaleHost) and not both[1].inside
    assert both[1].factor == pytest.approx(2.0, abs=0.05)
    assert replay_step(ev, 1, both).step_us == pytest.approx(140.0, abs=1.0)


def test_another_loop_is_paced_by_the_untraced_time_between_calls() -> None:
    """60 us of the caller's own work between calls (no DataLoader), 15 us of it between two
    untraced warm-up calls: the loop's host at a quarter of its pace; a DataLoader's loop
    keeps its profiled pace whatever the warm-up gaps say."""
    t = Trace()
    for k, at in enumerate((0.0, 100.0)):
        t.step(k + 1, at, 100).cpu("log_metrics", at, 60).region("train_step", at + 60, 40) \
            .launch(at + 92, 5, at + 98, 2)
    ev = t.frame()
    ref = Reference(call_us=45.0, between_us=15.0, sync_us=2.0)
    changes = host_baseline(ev, "train_step", loop_split(ev, "train_step"), ref)
    assert [(c.region, c.inside) for c in changes] == [("train_step", True),
                                                      ("train_step", False)]
    assert changes[1].factor == pytest.approx(0.25, abs=0.01)
    loader = loader_loop().frame()
    kept = host_baseline(loader, "train_step", loop_split(loader, "train_step"), ref)
    assert [(c.region, c.inside) for c in kept] == [("train_step", True)]


def test_a_step_that_is_the_call_scales_every_host_cost() -> None:
    t = Trace().step(1, 0, 100).region("train_step", 0, 100).launch(90, 5, 96, 2)
    ev = t.frame()
    changes = host_baseline(ev, "train_step", loop_split(ev, "train_step"), Reference(call_us=50.0))
    assert len(changes) == 1 and isinstance(changes[0], ScaleHost)
    assert changes[0].region is None
    assert replay_step(ev, 1, changes).step_us == pytest.approx(50.0, abs=0.5)


def test_removing_a_mask_index_line_removes_the_ops_on_its_selection() -> None:
    """A step `x[x > 0].square().mean()` behind a 40 us kernel: the index syncs under
    aten::nonzero, its selection (size 300) feeds aten::square; an aten::relu on the whole
    tensor does not."""
    t = (Trace().step(1, 0, 200).region("train_step", 0, 200).launch(2, 5, 8, 40)
         .cpu("aten::index", 10, 50).cpu("aten::nonzero", 12, 46)
         .cpu("cudaStreamSynchronize", 14, 42, "cuda_runtime")
         .cpu("aten::square", 70, 40).launch(72, 5, 78, 30)
         .cpu("aten::relu", 120, 40).launch(122, 5, 128, 30))
    ev = t.frame()
    dims = {"aten::index": "[[1000, 8], []]", "aten::nonzero": "[[1000, 8]]",
            "aten::square": "[[300]]", "aten::relu": "[[1000, 8]]"}
    ev["input_dims"] = ev["name"].astype(str).map(dims).fillna("")
    g = build_graph(ev)
    names = g.events["name"].astype(str).to_numpy()
    assert sorted(names[selection_rows(g)].tolist()) == ["aten::index", "aten::square"]
    base = replay_step(ev, 1).step_us
    # the index (50 us) and the square with its launch and kernel (40 us) go
    assert replay_step(ev, 1, fix_changes("remove-line", "train_step")).step_us < base - 80
    assert replay_step(ev, 1, fix_changes("remove-sync", "train_step")).step_us > base - 60
