"""The decorated call's CUDA tensor arguments, in bytes, read on its first warm-up call and
kept in the manifest as ``call_input_bytes``: what a CUDA graph of the call copies into its
static inputs on every replay (the replay's `cuda-graph` prediction)."""

from __future__ import annotations

import torch

from autoprof import autoprof
from autoprof.record.session.inputs import cuda_input_bytes
from autoprof.runfolder import Manifest
from tests.core.conftest import manifest, only_run


def _every(_: object) -> bool:
    return True


def test_tensors_are_counted_one_level_deep_in_args_and_kwargs():
    x = torch.ones(4, 8)  # 128 bytes
    y = torch.ones(3, dtype=torch.bfloat16)  # 6 bytes
    deep = [[torch.ones(100)]]  # two levels down: not a batch the call copies
    args = (x, (y, 7, "label"), {"mask": torch.ones(2, dtype=torch.bool)}, deep)
    assert cuda_input_bytes(args, {"z": x}, counted=_every) == 128 + 6 + 2 + 128
    assert cuda_input_bytes((), {}, counted=_every) == 0


def test_tensors_off_the_gpu_are_not_counted():
    assert cuda_input_bytes((torch.ones(16),), {"b": [torch.ones(2)]}) == 0


def test_the_manifest_keeps_the_first_warm_up_calls_input_bytes(traces_root):
    fn = autoprof(name="inputs", warmup=2, schedule={"wait": 0, "warmup": 1, "active": 1})(
        lambda x, scale=1.0: x * scale)
    for _ in range(4):
        fn(torch.ones(8), scale=2.0)
    fn.autoprof_session.flush()
    run = only_run(traces_root, "inputs")
    raw = manifest(run)
    assert raw["call_input_bytes"] == 0  # a CPU tensor: nothing a CUDA graph copies
    record = Manifest.from_json((run / "manifest.json").read_bytes(), run / "manifest.json")
    assert record.call_input_bytes == 0


def test_a_region_writes_no_input_bytes(traces_root):
    import autoprof as ap

    for _ in range(5):
        with ap.region("block", warmup=1, schedule={"wait": 0, "warmup": 1, "active": 1}):
            torch.ones(4).sum()
    ap.flush()
    run = only_run(traces_root, "block")
    assert "call_input_bytes" not in manifest(run)
    record = Manifest.from_json((run / "manifest.json").read_bytes(), run / "manifest.json")
    assert record.call_input_bytes is None


def test_a_tensor_that_cannot_say_its_size_counts_nothing():
    class Odd(torch.Tensor):
        def numel(self):  # type: ignore[override]
            raise RuntimeError("no size")

    odd = torch.ones(4).as_subclass(Odd)
    assert cuda_input_bytes((odd, torch.ones(2)), {}, counted=_every) == 8
