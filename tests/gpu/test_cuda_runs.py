"""GPU-only checks (``pytest -m gpu``): CI has no GPU and skips them; docs/gpu-validation.md
records the runs on an NVIDIA H200."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import autoprof  # noqa: E402
from autoprof import autoprof as profile_fn  # noqa: E402

pytestmark = pytest.mark.gpu

SCHEDULE = {"wait": 1, "warmup": 1, "active": 3, "repeat": 1}


def _matmul_add(x, w, b):
    return torch.matmul(x, w) + b


def _operands(size):
    x = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(size, device="cuda", dtype=torch.bfloat16)
    return x, w, b


@pytest.mark.parametrize(("size", "expected"), [(64, "overhead-bound"), (4096, "compute-bound")])
def test_seed_verdicts_on_cuda(tmp_path, size, expected):
    fn = profile_fn(name=f"seed_{size}", out_dir=str(tmp_path), schedule=SCHEDULE)(_matmul_add)
    run = autoprof.check(fn, *_operands(size))
    assert run.verdict().kind == expected, run.summary()


@pytest.mark.parametrize(("size", "expected"), [(64, "overhead-bound"), (4096, "compute-bound")])
def test_seed_verdicts_with_the_default_schedule_and_its_lines_step(tmp_path, size, expected):
    """The default schedule records source lines in its first warm-up step; torch's profiler
    warms up in the second, so the measured steps keep their verdict."""
    fn = profile_fn(name=f"seed_lines_{size}", out_dir=str(tmp_path))(_matmul_add)
    run = autoprof.check(fn, *_operands(size))
    assert list(Path(run.path).glob("lines.*.json.gz")), run.path
    assert run.verdict().kind == expected, run.summary()


def test_every_kernel_is_linked_to_its_launch(tmp_path):
    fn = profile_fn(name="links", out_dir=str(tmp_path), schedule=SCHEDULE)(_matmul_add)
    run = autoprof.check(fn, *_operands(256))
    ev = run.events
    kernels = ev[ev["cat"] == "kernel"]
    # 2 kernels (GEMM + add) per active step, none lost before export
    assert len(kernels) == 2 * SCHEDULE["active"]
    assert (kernels["launch_row"] >= 0).all()
    assert (kernels["op_row"] >= 0).all()
    assert (kernels["step"] >= 0).all()


def test_warmup_calls_are_timed_with_sync(tmp_path):
    fn = profile_fn(name="warm", out_dir=str(tmp_path), warmup=4, schedule=SCHEDULE)(_matmul_add)
    run = autoprof.check(fn, *_operands(4096))
    warm_ms = run.manifest["warmup_call_ms"]
    assert len(warm_ms) == 4
    # synchronised timing: a 4096 bf16 GEMM cannot finish in under 50 us on any current GPU
    assert min(warm_ms) > 0.05, warm_ms
    assert run.manifest["device"]["name"]


def test_the_manifest_keeps_the_calls_cuda_input_bytes(tmp_path):
    """x, w (64 x 64 bf16: 8 KiB each) and b (64 bf16: 128 bytes) on the GPU, a CPU scale
    left out: what a CUDA graph of the call copies in on every replay."""
    x, w, b = _operands(64)
    fn = profile_fn(name="inputs", out_dir=str(tmp_path), schedule=SCHEDULE)(
        lambda x, w, b, scale: _matmul_add(x, w, b) * scale.sum().item())
    run = autoprof.check(fn, x, w, b, torch.ones(4))
    assert run.record.call_input_bytes == 2 * 8192 + 128
    assert run.analysis.graph_input_copy_us > 0
