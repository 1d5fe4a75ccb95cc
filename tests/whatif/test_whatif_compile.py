"""torch.compile on CPU (slow: building the kernels takes seconds on two cores)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import autoprof
from autoprof import autoprof as autoprof_decorator

TINY = {"wait": 0, "warmup": 1, "active": 1, "repeat": 1}


@pytest.mark.slow
def test_compile_makes_a_chain_of_small_ops_faster_with_matching_outputs():
    @autoprof_decorator(name="chain", warmup=1, schedule=TINY)
    def chain(x):
        for _ in range(8):
            x = torch.relu(x * 1.01 + 0.5)
        return x

    x = torch.randn(256, 256)
    run = autoprof.check(chain, x, try_fixes="auto")  # a CPU-only run: auto tries compile
    results = {r["fix"]: r for r in run.summary()["whatif"]}
    compiled = results["compile"]
    assert compiled["suggested_by"] == ["cpu-only"]
    assert compiled["status"] == "faster", compiled
    assert compiled["outputs_match"] is True and compiled["max_abs_error"] <= 1e-3
    assert compiled["speedup"] > 1.5 and compiled["speedup_low"] > 1
    assert compiled["setup_s"] > 0.1  # compilation, paid on the first call
    assert compiled["break_even_calls"] >= 1
    # the best fix was profiled like the original, beside it
    assert compiled["fixed_verdict"] == "cpu-only"
    fixed_run = Path(run.path) / compiled["fixed_run"]
    assert (fixed_run / "manifest.json").is_file()
    assert autoprof.load(fixed_run).name == "chain.compile"
    assert results["inference-mode"]["applicable"] is False
