"""Every truth-suite workload runs on the CPU at tiny sizes (benchmarks/gpu/truth/).

Each variant (the baseline and every fix that applies without CUDA) is built and timed for two
iterations through the same timer the H200 run used; one workload goes through ``record.py``
and ``ground_truth.py`` end to end, each in its own process, as ``drive.py`` runs them.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
TRUTH = ROOT / "benchmarks" / "gpu" / "truth"
sys.path.insert(0, str(TRUTH))

from common import Ctx, time_block  # noqa: E402
from workloads import WORKLOADS  # noqa: E402

# compiling (torch.compile on the CPU), importing transformers or starting worker processes
# takes more than a few seconds on a CI machine
SLOW = {"compiled_mlp", "gpt2_tiny", "gpt2_large", "mlp_loader_w0", "mlp_loader_w4_pin",
        "cnn_loader_w0_pin", "cnn_loader_w4", "mlp_loader_inside", "infer_large",
        "mlp_loader_w2", "cnn_loader_w0", "bert_train", "gpt2_mid"}
CPU = Ctx("cpu", tiny=True)


def _params() -> list[object]:
    return [pytest.param(n, marks=[pytest.mark.slow] if n in SLOW else []) for n in WORKLOADS]


@pytest.mark.slow
@pytest.mark.parametrize("name", _params())
def test_every_variant_runs_two_iterations_on_the_cpu(name):
    workload = WORKLOADS[name]
    if workload.needs and importlib.util.find_spec(workload.needs) is None:
        pytest.skip(f"{workload.needs} is not installed")
    variants = workload.build(CPU)
    assert next(iter(variants)) == "baseline" and len(variants) >= 2
    for variant_name, build in variants.items():
        variant = build()
        variant.warm_iters = 0
        for mode in ("iter", "call"):
            block = time_block(variant, 2, CPU, mode)
            assert len(block.iter_host_ms) == len(block.call_host_ms) == 2, variant_name
            assert all(t > 0 for t in block.iter_host_ms), variant_name
            assert len(block.iter_ms if mode == "iter" else block.call_ms) == 2


def test_cuda_only_fixes_are_left_out_on_the_cpu():
    for name, workload in WORKLOADS.items():
        if workload.needs and importlib.util.find_spec(workload.needs) is None:
            continue
        fixes = set(workload.build(CPU))
        assert not fixes & {"cuda_graph", "compile_reduce_overhead", "graph_without_sync",
                            "cuda_graph_one_stream", "no_copy", "compile_in_graph"}, name


@pytest.mark.slow
def test_record_and_ground_truth_end_to_end_on_the_cpu(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AUTOPROF_DIR": str(tmp_path / "traces")}
    rec = subprocess.run([sys.executable, str(TRUTH / "record.py"), "--workload", "seed_64",
                          "--out", str(tmp_path / "rec"), "--device", "cpu"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert rec.returncode == 0, rec.stderr[-2000:]
    record = json.loads((tmp_path / "rec" / "record.json").read_text())
    assert record["status"] == "complete"
    assert len(record["profiled_step_ms"]) == 3 and len(record["manifest_warmup_call_ms"]) == 5
    gt = subprocess.run([sys.executable, str(TRUTH / "ground_truth.py"), "--workload", "seed_64",
                         "--out", str(tmp_path / "gt.json"), "--device", "cpu", "--rounds", "2",
                         "--block-s", "0.01"], env=env, capture_output=True, text=True,
                        timeout=300)
    assert gt.returncode == 0, gt.stderr[-2000:]
    truth = json.loads((tmp_path / "gt.json").read_text())
    assert truth["autoprof_imported"] is False and truth["profiler_enabled"] is False
    assert set(truth["stats"]) == {"baseline", "addmm"}
    assert truth["speedups"]["addmm"]["iter"]["speedup"] > 0


@pytest.mark.slow
def test_an_isolated_workload_builds_each_block_afresh_and_closes_it():
    import ground_truth

    built: list[int] = []
    closed: list[int] = []
    name = "seed_64"
    original = WORKLOADS[name]
    real = original.build

    def counting(ctx):
        out = {}
        for vname, build in real(ctx).items():
            def wrapped(build=build):
                variant = build()
                built.append(id(variant))
                inner = variant.batches

                def batches():
                    try:
                        yield from inner
                    finally:
                        closed.append(id(variant))

                variant.batches = batches()
                return variant
            out[vname] = wrapped
        return out

    WORKLOADS[name] = dataclasses.replace(original, build=counting)
    try:
        result = ground_truth.measure(name, CPU, rounds=2, block_s=0.001, isolate=True)
    finally:
        WORKLOADS[name] = original
    variants = len(result["variants"])
    assert result["isolated"] is True and not result["errors"]
    # one build to calibrate and one per timed block, each closed when its block ends
    assert len(built) == variants * (1 + 2)
    assert sorted(closed) == sorted(built)
    assert set(result["stats"]) == set(result["variants"])


def test_loader_workloads_are_timed_isolated_and_the_second_set_is_marked_held_out():
    assert all(WORKLOADS[n].isolate for n in WORKLOADS if "loader" in n)
    assert not any(WORKLOADS[n].isolate for n in WORKLOADS if "loader" not in n)
    held_out = {n for n, w in WORKLOADS.items() if w.held_out == 2}
    held_out2 = ROOT / "benchmarks" / "validation" / "data" / "gpu_h200_truth_heldout2"
    data = json.loads((held_out2 / "ground_truth.json").read_text())
    assert held_out == set(data["workloads"])
