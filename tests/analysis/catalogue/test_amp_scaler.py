"""GradScaler in an fp16 AMP step (metrics/replay/scaler.py, diagnose/code_fixes.py): its
ops and found_inf sync found by name and place, offered as bf16 autocast without a scaler,
and the CUDA graph's hint naming the scaler's sync as what capture refuses; on the H100
catalogue held to the gain measured without the profiler."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from support.store import committed

from autoprof.analysis.diagnose.predictions import _graph_blockers
from autoprof.analysis.metrics.replay.scaler import UNSCALE, UPDATE, scaler_rows_of

CATALOGUE = Path(__file__).resolve().parents[2] / "data" / "gpu_h100_catalogue"


def _rows(names: list[str]) -> np.ndarray:
    """The scaler's rows among `names`, all children of row 0 (the call), in order."""
    table = ["call", *names]
    parent = np.array([-1] + [0] * len(names), dtype=np.int64)
    return scaler_rows_of(np.asarray(table, dtype=object),
                          np.arange(len(table), dtype=float), parent)


def test_the_scalers_ops_and_its_found_inf_sync_are_found_by_name_and_place() -> None:
    names = ["aten::linear", "aten::mul", "aten::ones_like", "aten::to", "aten::reciprocal",
             "aten::full", UNSCALE, "aten::item", "Optimizer.step#AdamW.step", "aten::to",
             UPDATE]
    # row 0 is the call: the linear, the loss's mul and the backward seed stay, and so
    # does the optimizer's step
    assert _rows(names).tolist() == [4, 5, 6, 7, 8, 10, 11]


def test_unscale_called_by_hand_keeps_the_clipping_and_the_users_read() -> None:
    """`scaler.unscale_(opt)`, `clip_grad_norm_` (a norm), the user's `norm.item()`, then
    `scaler.step(opt)`: its found_inf read is the last `.item()` before the optimizer's
    step; the clipping and the user's read stay. With no step row after it (a step not
    labelled) the first read after the unscale is the scaler's."""
    names = ["aten::reciprocal", "aten::full", UNSCALE, "aten::_foreach_norm", "aten::item",
             "aten::item", "Optimizer.step#AdamW.step", "aten::to", UPDATE]
    assert _rows(names).tolist() == [1, 2, 3, 6, 8, 9]
    assert _rows(["aten::full", UNSCALE, "aten::_foreach_norm", "aten::item", "aten::mul",
                  "aten::to", UPDATE]).tolist() == [1, 2, 4, 6, 7]


def test_a_step_without_a_scaler_has_no_scaler_rows() -> None:
    names = ["aten::linear", "aten::to", "aten::item", "Optimizer.step#AdamW.step"]
    assert _rows(names).size == 0


def test_the_graph_says_the_scalers_sync_cannot_be_captured() -> None:
    graph = {"cause": "host_launch", "fix": "cuda-graph", "hint": "capture"}
    scaler = {"cause": "amp_scaler", "fix": "bf16-autocast", "hint": "bf16"}
    out = _graph_blockers([graph, scaler])
    assert "GradScaler" in out[0]["hint"] and "cannot be captured" in out[0]["hint"]
    assert out[1] == scaler
    assert _graph_blockers([graph]) == [graph]


@pytest.mark.slow
def test_the_h100_grad_scaler_step_is_offered_bf16_and_no_other_program_is() -> None:
    truth = json.loads((CATALOGUE / "catalogue_truth.json").read_text())["cases"]
    for case, about in truth.items():
        opps = committed.run(CATALOGUE / about["record"]["run"]).analysis.opportunities
        scaler = [o for o in opps if o["cause"] == "amp_scaler"]
        if case != "grad_scaler":
            assert not scaler, case
            continue
        (found,) = scaler
        assert found["fix"] == "bf16-autocast"
        band = found["predicted_interval"]
        assert band["low"] <= about["measured_speedup"] <= band["high"]
        graph = next(o for o in opps if o.get("fix") == "cuda-graph")
        assert "GradScaler" in graph["hint"]
