"""Third-party models recorded on CPU (benchmarks/cpu_models/record.py, one intra-op thread
unless the case says otherwise): every finding they get is true by its own measure,
recomputed here from the raw events (cpu_measures.py), and the known false positives of real
models do not fire."""

from __future__ import annotations

import json
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from autoprof.analysis import Run, load

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu_measures import MEASURES, heaviest_op, iteration_ms, short_ops_pct  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "data" / "cpu_models"
RECORDING: dict[str, dict[str, Any]] = json.loads((DATA / "recording.json").read_text())
MODELS = ("gpt2_train", "gpt2_eval", "bert_train", "vit_train", "t5_train", "cnn_train",
          "lstm_train")
ALL = tuple(sorted(RECORDING))


@cache
def _run(name: str) -> Run:
    return load(DATA / RECORDING[name]["run"])


def _findings(name: str) -> dict[str, Any]:
    return {d.id: d for d in _run(name).diagnostics()}


def test_the_recordings_are_the_documented_cases():
    assert set(MODELS) <= set(RECORDING)
    for name, entry in RECORDING.items():
        assert entry["trace_kib"] < 1024, name
        assert (DATA / entry["run"] / "manifest.json").is_file(), name


@pytest.mark.parametrize("name", ALL)
def test_every_finding_is_true_by_its_own_measure(name: str):
    run = _run(name)
    for finding in run.diagnostics():
        measure = MEASURES.get(finding.id)
        assert measure is not None, f"{name}: {finding.id} has no independent measure here"
        pairs = measure(run.events, run.manifest or {}, name, finding.evidence)
        assert pairs, f"{name}: {finding.id} names no measure in its evidence"
        for value, threshold in pairs:
            assert value >= threshold, (name, finding.id, value, threshold, finding.evidence)


@pytest.mark.parametrize("name", ["gpt2_train", "gpt2_eval", "bert_train"])
def test_transformers_steps_are_not_dispatch_bound(name: str):
    run = _run(name)
    assert short_ops_pct(run.events, name) < 10.0  # what the false positive ignored
    assert "cpu-dispatch-bound" not in _findings(name)


@pytest.mark.parametrize("name", MODELS)
def test_warm_models_have_no_cold_profiled_step(name: str):
    """Three warm-up calls ran first: nothing one-time is left in the profiled steps (a slow
    first warm-up call may still be named, as the info it is)."""
    d = _findings(name).get("cold-start")
    assert d is None or (d.evidence["step_slow"] is False and d.severity == "info")


@pytest.mark.parametrize("name", ALL)
def test_cpu_bounds_are_fixes_not_removing_all_host_work(name: str):
    run = _run(name)
    steps = iteration_ms(run.events, name)  # a share of the step: the whole iteration
    for o in run.analysis.opportunities:
        assert o["cause"] != "host_cpu_work", (name, o)
        assert o["pct_of_step"] < 100.0
        if o["max_speedup"] is not None:  # a bound is its own share taken away, no more
            assert o["max_speedup"] == pytest.approx(100.0 / (100.0 - o["pct_of_step"]),
                                                     rel=1e-6)
    ops = [o for o in run.analysis.opportunities if o["cause"] == "cpu_op"]
    assert ops, name
    op, self_us = heaviest_op(run.events, name)
    assert ops[0]["where"][0]["name"] == op
    own_pct = 100.0 * self_us / (1e3 * sum(steps) / len(steps))
    assert ops[0]["pct_of_step"] == pytest.approx(own_pct, rel=0.05)


def test_a_torch_compile_first_call_is_named_as_compilation():
    d = _findings("compile_mlp")["cold-start"]
    assert d.evidence["compiled"] is True
    assert "compil" in d.message and "torch.compile" in d.hint
    assert "x the median" not in d.message  # a 10,000x ratio says nothing a reader can use


def test_a_lazy_module_s_first_call_is_a_cold_start():
    d = _findings("lazy_first_call")["cold-start"]
    assert d.evidence["step_slow"] is True
    assert d.severity == "warning"


def test_steady_single_thread_control_has_no_threads_finding():
    assert "threads" not in _findings("seed64_threads1")


@pytest.mark.parametrize("name", ["seed64_threads2", "gpt2_train_threads2"])
def test_two_intra_op_threads_on_the_loaded_host_get_the_threads_finding(name: str):
    """The same steps with one thread (seed64_threads1, gpt2_train) get none."""
    d = _findings(name)["threads"]
    assert "torch.set_num_threads" in d.hint
    assert RECORDING[name]["intra_op_threads"] == 2
    assert "threads" not in _findings(name.replace("_threads2", "_threads1")
                                      if name.startswith("seed") else "gpt2_train")
