"""The one-line fixes no bucket names (diagnose/code_fixes.py), on the H200 truth recordings:
a fused optimizer and a bias add folded into its GEMM, each offered with its replayed gain,
and left out where the trace shows the fused form or the gain is within noise."""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.store import committed
from support.truth import measured_speedup, truth_dir, within_goal

import autoprof
from autoprof.analysis.diagnose.code_fixes import MIN_SPEEDUP, code_fixes


def _run(folder: str, workload: str) -> autoprof.Run:
    root = truth_dir(folder)
    truth = json.loads((root / "ground_truth.json").read_text())["workloads"][workload]
    return committed.run(root / truth["record"]["run"])


def _by_cause(run: autoprof.Run) -> dict[str, dict[str, Any]]:
    return {str(o["cause"]): o for o in run.analysis.opportunities}


@pytest.mark.slow
def test_an_unfused_adamw_is_offered_as_the_fused_optimizer() -> None:
    """bert_train: fused AdamW is the held-out set's best fix measured by hand."""
    opp = _by_cause(_run("gpu_h200_truth_heldout2", "bert_train"))["optimizer_ops"]
    assert opp["fix"] == "fused-optimizer"
    measured = measured_speedup("gpu_h200_truth_heldout2", "bert_train", "adamw_fused")
    assert within_goal(opp["predicted_speedup"], measured), (opp["predicted_speedup"], measured)
    assert "torch.optim.AdamW(..., fused=True)" in opp["hint"]
    assert opp["where"][0]["name"] == "Optimizer.step#AdamW.step"
    step_us = opp["us_per_step"] / (opp["pct_of_step"] / 100)
    assert opp["max_speedup"] == pytest.approx(step_us / (step_us - opp["us_per_step"]))
    assert opp["ranked_by"] == "predicted_speedup"


@pytest.mark.slow
def test_a_bias_add_after_its_matmul_is_offered_as_addmm() -> None:
    """seed_4096: the prediction within the goal of addmm timed by hand."""
    opp = _by_cause(_run("gpu_h200_truth", "seed_4096"))["bias_add"]
    assert opp["fix"] == "addmm" and "torch.addmm(b, x, w)" in opp["hint"]
    measured = measured_speedup("gpu_h200_truth", "seed_4096", "addmm")
    assert within_goal(opp["predicted_speedup"], measured), (opp["predicted_speedup"], measured)


@pytest.mark.slow
def test_a_gain_within_noise_is_not_offered() -> None:
    """gpt2_large: fused AdamW measured 1.03x by hand; replayed it gains under MIN_SPEEDUP."""
    causes = _by_cause(_run("gpu_h200_truth", "gpt2_large"))
    assert "optimizer_ops" not in causes


@pytest.mark.slow
def test_an_optimizer_fused_already_gets_no_fused_optimizer() -> None:
    run = _run("gpu_h200_truth_heldout2", "bert_train")
    events = run.analysis.events.copy()
    step_us = float(run.analysis.breakdown.steps["step_us"].mean())
    assert [o["cause"] for o in code_fixes(events, run.analysis.call_region, (), step_us)] \
        == ["optimizer_ops"]
    names = events["name"].astype(str)  # its per-parameter ops; one of them as the fused op
    events["name"] = names.where(names != "aten::lerp_", "aten::_fused_adamw_")
    assert code_fixes(events, run.analysis.call_region, (), step_us) == []
    assert MIN_SPEEDUP > 1.0
