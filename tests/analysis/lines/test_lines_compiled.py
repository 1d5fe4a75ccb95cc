"""Through torch.compile on CPU: with inductor's provenance on and its C++ kernels profiled
(tests/analysis/lines/compiled_lines.py), each fused kernel of the measured steps is named
by the forward line it came from, read from the lines trace's kernel lines; the measured
steps still run the graph compiled before the lines step."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import autoprof
from autoprof.analysis.metrics.lines import find_lines_files
from autoprof.analysis.metrics.lines.trace import read_lines_file

PROGRAM = Path(__file__).with_name("compiled_lines.py")
pytestmark = pytest.mark.slow  # inductor compiles the module twice (about 2 minutes here)


def marker_line(name: str) -> int:
    for number, text in enumerate(PROGRAM.read_text().splitlines(), start=1):
        if text.rstrip().endswith(f"# LINE: {name}"):
            return number
    raise AssertionError(f"no marker {name}")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> autoprof.Run:
    tmp = tmp_path_factory.mktemp("compiled")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3]),
           "TORCHINDUCTOR_CACHE_DIR": str(tmp / "inductor")}
    subprocess.run([sys.executable, str(PROGRAM), str(tmp)], check=True, env=env,
                   timeout=900, capture_output=True)
    (run_dir,) = sorted((tmp / "compiled_lines").iterdir())
    return autoprof.load(run_dir)


@pytest.mark.slow
def test_fused_kernels_take_their_forward_lines(run: autoprof.Run) -> None:
    events = run.events
    rows = run.analysis.source_lines.attribution.rows
    names = events["name"].astype(str)
    where = {"gelu": f"{PROGRAM.resolve()}:{marker_line('gelu')} (forward)",
             "tanh": f"{PROGRAM.resolve()}:{marker_line('tanh')} (forward)"}
    for part, source in where.items():
        kernels = events.index[names.str.contains(f"cpp_fused.*{part}") & (events["step"] >= 0)]
        assert len(kernels) == 3, part  # one per measured step
        assert (rows["source"].reindex(kernels) == source).all(), part
    (lines,) = find_lines_files(run.path).values()
    kept = {k for graph in read_lines_file(lines).kernels.values() for k in graph}
    assert {"cpp_fused_gelu_0", "cpp_fused_add_mul_tanh_1"} <= kept


def test_the_measured_steps_run_the_first_graph(run: autoprof.Run) -> None:
    events = run.events
    regions = events[events["name"].astype(str).str.startswith("Torch-Compiled Region")
                     & (events["step"] >= 0)]
    assert set(regions["name"].astype(str)) == {"Torch-Compiled Region: 0/0"}
    assert sorted(regions["step"]) == [3, 4, 5]  # after wait, the lines step, warm-up
