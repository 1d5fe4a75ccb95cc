"""Lines through CUDA graphs and torch.compile, on hand-built events and lines traces (a
CUDA-graph replay needs a GPU; the recording side's pieces are checked on CPU): a replay's
kernels take the ``graph.replay()`` line, a compiled graph's kernels the line inductor's
provenance names, looked up in the graph whose call encloses the launch."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import torch

from autoprof.analysis.metrics.lines.match import attribute, attribute_run
from autoprof.analysis.metrics.lines.trace import LinesOp, read_lines_file
from autoprof.record.lines import is_user_file, not_user_prefixes
from autoprof.record.lines_graphs import ReplayLabels, inductor_kernels, user_source

COLUMNS = ("name", "cat", "tid", "step", "ts_us", "dur_us", "self_us", "rank", "op_row",
           "launch_row", "parent", "is_gpu_work")


def table(rows: list[tuple[Any, ...]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(COLUMNS))


def test_a_replay_s_kernels_take_the_replay_line() -> None:
    # per step: an op, then a graph launch (no op encloses it) and the two kernels it replays
    rows: list[tuple[Any, ...]] = []
    for step in (2, 3):
        base = len(rows)
        t = step * 1000.0
        rows += [("aten::copy_", "cpu_op", 7, step, t, 10.0, 10.0, 0, -1, -1, -1, False),
                 ("cudaGraphLaunch", "cuda_runtime", 7, step, t + 20, 5.0, 5.0, 0, -1, -1, -1,
                  False),
                 ("kernel_a", "kernel", 1, step, t + 30, 50.0, 50.0, 0, -1, base + 1, -1, True),
                 ("kernel_b", "kernel", 1, step, t + 80, 70.0, 70.0, 0, -1, base + 1, -1, True)]
    events = table(rows)
    lines = [LinesOp(7, "aten::copy_", 0.0, "/a/train.py:10 (step)", ""),
             LinesOp(7, "cudaGraphLaunch", 20.0, "/a/train.py:11 (step)", "")]
    got = attribute(events, {0: lines}).rows["source"]
    assert got[0] == got[4] == "/a/train.py:10 (step)"
    assert all(got[i] == "/a/train.py:11 (step)" for i in (1, 2, 3, 5, 6, 7))


def test_compiled_kernels_take_inductor_s_lines() -> None:
    call = "## Call CompiledFxGraph graphA ##"
    events = table([
        ("Torch-Compiled Region: 0/0", "cpu_op", 7, 2, 0.0, 100.0, 10.0, 0, -1, -1, -1, False),
        (call, "user_annotation", 7, 2, 5.0, 90.0, 10.0, 0, 0, -1, 0, False),
        ("cudaLaunchKernel", "cuda_runtime", 7, 2, 10.0, 5.0, 5.0, 0, 0, -1, 1, False),
        ("triton_poi_fused_gelu_0", "kernel", 1, 2, 20.0, 40.0, 40.0, 0, 0, 2, -1, True),
        ("triton_poi_fused_gelu_0", "kernel", 1, 2, 70.0, 40.0, 40.0, 0, 0, -1, -1, True),
    ])
    lines = [LinesOp(7, "Torch-Compiled Region: 0/0", 0.0, "/a/train.py:20 (step)", "")]
    kernels = {"graphA": {"triton_poi_fused_gelu_0": ["/a/model.py:7 (forward)"]},
               "graphB": {"triton_poi_fused_gelu_0": ["/a/model.py:99 (forward)"]}}
    got = attribute(events, {0: lines}, kernels).rows["source"]
    assert got[0] == "/a/train.py:20 (step)"  # the compiled call: the line that calls it
    assert got[3] == "/a/model.py:7 (forward)"  # launched inside graphA's call
    assert got[4] == "/a/train.py:20 (step)"  # no launch, two graphs with that name: the call


def test_user_source_of_an_fx_stack_trace() -> None:
    trace = ('  File "/a/train.py", line 40, in step\n    y = model(x)\n'
             '  File "/usr/lib/python3.12/site-packages/torch/nn/modules/module.py", line 1, '
             'in _call_impl\n    return f()\n'
             '  File "/a/model.py", line 7, in forward\n    h = gelu(x)\n')
    assert user_source(trace, lambda p: "site-packages" not in p) == "/a/model.py:7 (forward)"
    assert user_source("no frames", lambda p: True) == ""


def test_no_inductor_no_kernels() -> None:
    import sys

    if "torch._inductor.output_code" in sys.modules:
        pytest.skip("inductor already imported by another test in this process")
    assert inductor_kernels(lambda p: True) == {}


def test_replay_is_labelled_and_restored() -> None:
    labels: list[str | None] = []

    class Handle:
        def __exit__(self, *args: Any) -> None:
            labels.append("exit")

    def label(line: str | None) -> Any:
        labels.append(line)
        return Handle()

    original = torch.cuda.CUDAGraph.replay
    replays = ReplayLabels(torch, lambda: "/a/train.py:11 (step)", label)
    assert torch.cuda.CUDAGraph.replay is not original
    replays.remove()
    assert torch.cuda.CUDAGraph.replay is original

    calls: list[str] = []

    class Fake:
        class cuda:  # noqa: N801 - the shape of torch.cuda
            class CUDAGraph:
                def replay(self) -> None:
                    calls.append("replayed")

    fake_replays = ReplayLabels(Fake, lambda: "/a/train.py:11 (step)", label)
    Fake.cuda.CUDAGraph().replay()
    fake_replays.remove()
    Fake.cuda.CUDAGraph().replay()
    assert calls == ["replayed", "replayed"]
    assert labels == ["/a/train.py:11 (step)", "exit"]  # the first replay only


def test_the_lines_trace_keeps_kernel_lines(tmp_path: Path) -> None:
    path = tmp_path / "lines.w.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": [], "autoprofInductorKernels": {
            "g": {"cpp_fused_gelu_0": ["/a/model.py:7 (forward)"]}}}, f)
    assert read_lines_file(path).kernels == {"g": {"cpp_fused_gelu_0": ["/a/model.py:7 (forward)"]}}
    empty = table([])
    assert attribute_run(tmp_path, empty).rows.empty


def test_inductor_files_are_not_user_code() -> None:
    prefixes = not_user_prefixes(torch)
    assert not is_user_file("/tmp/torchinductor_me/ab/cabc.py", prefixes)
    assert is_user_file("/home/me/train.py", prefixes)


H200_GRAPH = (Path(__file__).resolve().parents[2] / "data" / "gpu_h200_rerun" / "graph_replay"
              / "20261130-091727-8ac9b6")


def test_an_h200_replay_s_kernels_take_the_replay_line() -> None:
    """A CUDA-graph program recorded on the H200 (no lines trace: one is built from its own
    first step, the replay's launch labelled as the lines step labels it): every kernel its
    cudaGraphLaunch replays takes the replay's line."""
    from autoprof.analysis import load

    events = load(H200_GRAPH).events
    first = events[(events["step"] == int(events.loc[events["step"] >= 0, "step"].min()))]
    ordered = first[(first["cat"] == "cpu_op") | (first["name"] == "cudaGraphLaunch")]
    lines = [LinesOp(int(r.tid), str(r.name), float(r.ts_us),
                     "/a/train.py:11 (step)" if r.name == "cudaGraphLaunch"
                     else "/a/train.py:10 (step)", "")
             for r in ordered.sort_values("ts_us").itertuples()]
    rows = attribute(events, {0: lines}).rows
    launches = events.index[events["name"] == "cudaGraphLaunch"]
    replayed = events[events["launch_row"].isin(launches) & events["is_gpu_work"]]
    assert len(launches) >= 3 and len(replayed) >= 100
    assert (rows.loc[replayed.index, "source"] == "/a/train.py:11 (step)").all()
    assert (rows.loc[launches, "source"] == "/a/train.py:11 (step)").all()
