"""Ops of torch.compile'd code take the line that called the compiled module or function:
the lines step runs the compiled code as the measured steps do (no recompile, the same
ops: tests/analysis/lines/compiled_regions.py end to end), and an op of a measured step
left without a pair inside a compiled region takes that region's line (hand-built
events). With inductor's provenance on and its C++ kernels profiled (``provenance``), each
fused kernel of the measured steps is named by the forward line it came from."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

import autoprof
from autoprof.analysis.metrics.lines import find_lines_files
from autoprof.analysis.metrics.lines.match import attribute
from autoprof.analysis.metrics.lines.trace import LinesOp, read_lines_file
from autoprof.record.lines import LinesStep

PROGRAM = Path(__file__).with_name("compiled_regions.py")
REGION = "Torch-Compiled Region"


def marker(name: str) -> str:
    """``path:line (step)`` of the line marked ``# LINE: name`` in the program."""
    for number, text in enumerate(PROGRAM.read_text().splitlines(), start=1):
        if text.rstrip().endswith(f"# LINE: {name}"):
            return f"{PROGRAM.resolve()}:{number} ({'forward' if name in FORWARD else 'step'})"
    raise AssertionError(f"no marker {name}")


FORWARD = ("gelu", "tanh")


def _events(rows: list[tuple[str, int]]) -> pd.DataFrame:
    """Events of one step on one thread: (name, parent row) each."""
    n = len(rows)
    return pd.DataFrame({
        "name": [r[0] for r in rows], "cat": ["cpu_op"] * n, "tid": [7] * n, "step": [0] * n,
        "ts_us": [float(i) for i in range(n)], "self_us": [10.0] * n, "rank": [0] * n,
        "op_row": [-1] * n, "parent": [r[1] for r in rows], "dur_us": [10.0] * n,
        "lane": ["cpu"] * n, "is_gpu_work": [False] * n, "depth": [0] * n,
    })


def test_an_unpaired_op_inside_a_region_takes_the_regions_line() -> None:
    lines = [LinesOp(7, name, float(i), source, "") for i, (name, source) in enumerate([
        ("aten::cumsum", "t.py:3 (step)"), (f"{REGION}: 0/0", "t.py:4 (step)"),
        ("aten::addmm", "t.py:4 (step)"), ("aten::zero_", "t.py:9 (step)")])]
    events = _events([("aten::cumsum", -1), (f"{REGION}: 0/0", -1),
                      ("aten::copy_", 1),  # only the measured step has it: in the region
                      ("aten::addmm", 1), ("aten::empty", -1),  # outside: stays without
                      ("aten::zero_", -1)])
    rows = attribute(events, {0: lines}).rows["source"].to_dict()
    assert rows == {0: "t.py:3 (step)", 1: "t.py:4 (step)", 2: "t.py:4 (step)",
                    3: "t.py:4 (step)", 5: "t.py:9 (step)"}


def test_a_region_without_a_line_gives_none() -> None:
    lines = [LinesOp(7, "aten::cumsum", 0.0, "t.py:3 (step)", "")]
    events = _events([("aten::cumsum", -1), (f"{REGION}: 0/0", -1), ("aten::copy_", 1)])
    assert attribute(events, {0: lines}).rows["source"].to_dict() == {0: "t.py:3 (step)"}


def _record(tmp: Path, inductor_cache: Path, *flags: str) -> autoprof.Run:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3]),
           "TORCHINDUCTOR_CACHE_DIR": str(inductor_cache), "TORCH_LOGS": "recompiles"}
    done = subprocess.run([sys.executable, str(PROGRAM), str(tmp), *flags], check=True,
                          env=env, timeout=900, capture_output=True, text=True)
    assert "Recompiling" not in done.stderr  # the lines step ran the graphs compiled before
    (run_dir,) = sorted((tmp / "compiled_regions").iterdir())
    return autoprof.load(run_dir)


@pytest.fixture(scope="module")
def inductor_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One inductor cache for both recordings of this file, new to the file: the second
    reuses what does not depend on provenance (the C++ prefix, kernels of the same source;
    inductor's config is in its graph keys, so each run still compiles its own graphs),
    about 5 s of its ~20 s on two cores."""
    return tmp_path_factory.mktemp("inductor")


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory, inductor_cache: Path) -> autoprof.Run:
    return _record(tmp_path_factory.mktemp("regions"), inductor_cache)


@pytest.fixture(scope="module")
def provenance(tmp_path_factory: pytest.TempPathFactory, inductor_cache: Path) -> autoprof.Run:
    return _record(tmp_path_factory.mktemp("regions_provenance"), inductor_cache, "provenance")


def _outermost_region(events: pd.DataFrame, label: int) -> str:
    """The frame id (``0`` of ``0/0``) of the outermost compiled region enclosing ``label``
    ("" outside every region)."""
    names, parent = events["name"].astype(str), events["parent"]
    found, at = "", int(parent.at[label])
    while at >= 0:
        if names.at[at].startswith(REGION):
            found = names.at[at][len(REGION) + 2:].partition("/")[0]
        at = int(parent.at[at])
    return found


def _expected(events: pd.DataFrame, label: int) -> str:
    """The true line of a measured op: its compiled call's line inside a region (frame 0:
    the MLP; 1 and 2: ``broken`` and its resume after the graph break), else the eager
    line of its name."""
    region = _outermost_region(events, label)
    name = str(events.at[label, "name"])
    if name.startswith(REGION):
        region = name[len(REGION) + 2:].partition("/")[0] if not region else region
    if region:
        return marker("call") if region == "0" else marker("broken")
    if name == "TorchDynamo Cache Lookup":  # dynamo's guard check before a region
        return ""
    return marker("eager") if name in ("aten::cumsum", "aten::to") else marker("read")


@pytest.mark.slow
def test_every_op_takes_its_true_line(plain: autoprof.Run) -> None:
    events = plain.events
    attribution = plain.analysis.source_lines.attribution
    ops = events[(events["cat"] == "cpu_op") & (events["step"] >= 0)]
    got = attribution.rows["source"].reindex(ops.index).fillna("")
    checked = 0
    for label in ops.index:
        want = _expected(events, int(label))
        if want:
            assert got.at[label] == want, (events.at[label, "name"], got.at[label], want)
            checked += 1
    lookups = ops.index[ops["name"] == "TorchDynamo Cache Lookup"]
    assert set(got.reindex(lookups)) <= {marker("call"), marker("broken")}
    assert checked >= 3 * 30
    assert attribution.match_pct >= 99.0
    sorts = ops.index[ops["name"] == "aten::sort"]  # eager inside broken(): its call's line
    assert len(sorts) and (got.reindex(sorts) == marker("broken")).all()


@pytest.mark.slow
def test_the_lines_step_runs_the_measured_steps_graphs(plain: autoprof.Run) -> None:
    (path,) = find_lines_files(plain.path).values()
    lines = read_lines_file(path).ops
    step = plain.events[(plain.events["cat"] == "cpu_op") & (plain.events["step"] == 3)]
    assert [op.name for op in lines] == step.sort_values("ts_us")["name"].tolist()
    regions = {op.name for op in lines if op.name.startswith(REGION)}
    assert regions == {f"{REGION}: 0/0", f"{REGION}: 1/0", f"{REGION}: 2/0"}


@pytest.mark.slow
def test_provenance_names_kernels_finer(provenance: autoprof.Run) -> None:
    events = provenance.events
    rows = provenance.analysis.source_lines.attribution.rows
    names = events["name"].astype(str)
    for part, line in (("gelu", "gelu"), ("tanh", "tanh")):
        kernels = events.index[names.str.contains(f"cpp_fused.*{part}") & (events["step"] >= 0)]
        assert len(kernels) == 3, part
        assert (rows["source"].reindex(kernels) == marker(line)).all(), part
    others = events[(events["cat"] == "cpu_op") & (events["step"] >= 0)
                    & ~names.str.contains("cpp_fused")]
    got = rows["source"].reindex(others.index).fillna("")
    for label in others.index:
        want = _expected(events, int(label))
        if want:
            assert got.at[label] == want, (names.at[label], got.at[label], want)
    assert provenance.analysis.source_lines.attribution.match_pct >= 99.0
    # the lines trace keeps the fused kernels by name (the lines step's kernel lines)
    (lines,) = find_lines_files(provenance.path).values()
    kept = {k for graph in read_lines_file(lines).kernels.values() for k in graph}
    assert {"cpp_fused_gelu_0", "cpp_fused_add_mul_tanh_1"} <= kept


@pytest.mark.slow
def test_the_measured_steps_run_the_graphs_compiled_before(provenance: autoprof.Run) -> None:
    """Each compiled region runs once a measured step (after wait, the lines step and the
    profiler's warm-up: steps 3, 4, 5), and only its first graph (``n/0``): the lines step
    made no graph of its own."""
    events = provenance.events
    regions = events[events["name"].astype(str).str.startswith(REGION) & (events["step"] >= 0)]
    by_name = regions.groupby(regions["name"].astype(str))["step"].apply(sorted).to_dict()
    assert by_name == {f"{REGION}: {frame}/0": [3, 4, 5] for frame in (0, 1, 2)}


class _Outer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = torch.compile(torch.nn.Linear(4, 4), backend="eager")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x).relu()  # the compiled call's line


def test_the_lines_step_leaves_compiled_calls_as_they_were(tmp_path: Path) -> None:
    """In process (dynamo's eager backend): a compiled module called from a module runs
    its graph in the lines step without a recompile, inside a label of the calling line and
    its module path; nothing of the lines step stays on dynamo's contexts, the mode stack or
    torch's global hooks."""
    from torch._dynamo.utils import counters
    from torch.profiler import ProfilerActivity

    outer, x = _Outer(), torch.randn(2, 4)
    outer(x)
    compiled = counters["frames"]["ok"]
    enters = list(outer.inner.dynamo_ctx.enter_exit_hooks)
    lines = LinesStep([ProfilerActivity.CPU], False)
    lines.start()
    try:
        outer(x)
        mode_after = torch.overrides._get_current_function_mode()
    finally:
        path = lines.stop(tmp_path, "w")
    assert mode_after is not None  # the label mode is back after the compiled call
    assert counters["frames"]["ok"] == compiled
    assert outer.inner.dynamo_ctx.enter_exit_hooks == enters
    assert torch.overrides._get_current_function_mode() is None
    module = torch.nn.modules.module
    assert not module._global_forward_hooks and not module._global_forward_pre_hooks
    assert path is not None
    ops = read_lines_file(path).ops
    regions = [op for op in ops if op.name.startswith(REGION)]
    (number,) = [n for n, text in enumerate(Path(__file__).read_text().splitlines(), start=1)
                 if text.endswith("# the compiled call's line")]
    assert len(regions) == 1
    assert regions[0].source == f"{Path(__file__).resolve()}:{number} (forward)"
    assert regions[0].module == "_Outer.inner"
    inside = [op for op in ops if op.ts_us > regions[0].ts_us and op.name == "aten::addmm"]
    assert inside and all(op.source == regions[0].source for op in inside)
