"""Every truth-suite workload runs on the CPU at tiny sizes (benchmarks/gpu/truth/).

Each variant (the baseline and every fix that applies without CUDA) is built and timed for two
iterations through the same timer the H200 run used; one workload goes through ``record.py``
and ``ground_truth.py`` end to end, each in its own process, as ``drive.py`` runs them.
"""

from __future__ import annotations

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
        "cnn_loader_w0_pin", "cnn_loader_w4", "mlp_loader_inside", "infer_large"}
CPU = Ctx("cpu", tiny=True)


def _params() -> list[object]:
    return [pytest.param(n, marks=[pytest.mark.slow] if n in SLOW else []) for n in WORKLOADS]


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
