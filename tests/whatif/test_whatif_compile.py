"""torch.compile on CPU (slow: building the kernels takes seconds on two cores)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import autoprof
from autoprof import autoprof as autoprof_decorator

TINY = {"wait": 0, "warmup": 1, "active": 1, "repeat": 1}


@pytest.fixture
def one_thread():
    """Eager ops and inductor's C++ kernels on one thread each: on a small, busy machine two
    OpenMP pools (torch's and the compiled kernels') spinning against each other turn a 20 µs
    call into 15 ms, which is no measure of the fix. The config's own patch puts the setting
    back (monkeypatch's undo deletes it from inductor's config, failing a later test)."""
    import torch._inductor.config as inductor_config

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    with inductor_config.patch({"cpp.threads": 1}):
        yield
    torch.set_num_threads(threads)


@pytest.mark.slow
def test_compile_makes_a_chain_of_small_ops_faster_with_matching_outputs(one_thread):
    @autoprof_decorator(name="chain", warmup=1, schedule=TINY)
    def chain(x):
        for _ in range(16):  # 48 small ops: eager pays the dispatch of each, compiled one
            x = torch.relu(x * 1.01 + 0.5)
        return x

    x = torch.randn(32, 32)
    run = autoprof.check(chain, x, try_fixes="auto")  # a CPU-only run: auto tries compile
    results = {r["fix"]: r for r in run.summary()["whatif"]}
    compiled = results["compile"]
    assert "cpu-only" in compiled["suggested_by"]
    assert compiled["status"] == "faster", compiled
    assert compiled["outputs_match"] is True and compiled["max_abs_error"] <= 1e-3
    assert compiled["speedup"] > 1.5 and compiled["speedup_low"] > 1
    # compilation, paid on the first call: far more than a call (even from a warm inductor cache)
    assert compiled["setup_s"] * 1e6 > 100 * compiled["fixed_us"]
    assert compiled["break_even_calls"] >= 1
    # the best fix was profiled like the original, beside it
    assert compiled["fixed_verdict"] == "cpu-only"
    fixed_run = Path(run.path) / compiled["fixed_run"]
    assert (fixed_run / "manifest.json").is_file()
    assert autoprof.load(fixed_run).name == "chain.compile"
    assert results["inference-mode"]["applicable"] is False
