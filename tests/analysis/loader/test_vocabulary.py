"""One trace vocabulary: a ROCm trace counts its launches as a CUDA one does, and the loader
and the metrics agree on which spans are steps."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import autoprof
from autoprof.analysis.loader import vocabulary

SEED = Path(__file__).parents[2] / "data" / "gpu_h200" / "seed_n64"
_ROCM_CATS = {"cuda_runtime": "hip_runtime", "cuda_driver": "hip_driver"}


def _trace() -> Path:
    return next(SEED.glob("*/*.pt.trace.json.gz"))


def _as_rocm(event: dict) -> dict:
    """The event as a ROCm trace writes it: hip_* categories and hip* runtime names."""
    out = dict(event)
    cat = out.get("cat")
    if cat in _ROCM_CATS:
        out["cat"] = _ROCM_CATS[cat]
        out["name"] = str(out["name"]).replace("cuda", "hip", 1)
    return out


def test_a_rocm_trace_counts_its_launches(tmp_path):
    raw = json.loads(gzip.decompress(_trace().read_bytes()))
    cuda_launches = autoprof.load(_trace()).steps()["launches"]
    assert cuda_launches.sum() > 0
    raw["traceEvents"] = [_as_rocm(e) for e in raw["traceEvents"]]
    assert any(e.get("cat") == "hip_runtime" for e in raw["traceEvents"])
    rocm = tmp_path / "rocm.pt.trace.json"
    rocm.write_text(json.dumps(raw))

    rocm_launches = autoprof.load(rocm).steps()["launches"]

    assert rocm_launches.tolist() == cuda_launches.tolist()


def _step_trace(tmp_path: Path, span_name: str) -> Path:
    events = [
        {"ph": "X", "cat": "user_annotation", "name": span_name, "pid": 1, "tid": 1,
         "ts": 100.0, "dur": 50.0},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1,
         "ts": 110.0, "dur": 20.0},
    ]
    path = tmp_path / "t.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def test_loader_and_metrics_agree_on_what_a_step_is(tmp_path):
    (tmp_path / "a").mkdir()
    real = autoprof.load(_step_trace(tmp_path / "a", "ProfilerStep#3"))
    assert real.steps()["step"].tolist() == [3]
    assert set(real.events["step"].tolist()) == {3}

    (tmp_path / "b").mkdir()
    lookalike = autoprof.load(_step_trace(tmp_path / "b", "my ProfilerStep#3"))
    assert lookalike.steps().empty
    assert set(lookalike.events["step"].tolist()) == {-1}


def test_every_runtime_category_is_a_cpu_category():
    assert vocabulary.RUNTIME_CATS <= vocabulary.CPU_CATS
    assert not vocabulary.GPU_CATS & vocabulary.CPU_CATS
    assert vocabulary.STEP_NAME.match("ProfilerStep#12")
    assert not vocabulary.STEP_NAME.match("ProfilerStep#12 ")
