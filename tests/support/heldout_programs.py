"""The held-out GPU sets' shared check: every program and fix a set times (and records) is
valid Python, at full size for CUDA and tiny for the CPU. Imports ``benchmarks/gpu``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

GPU_BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu"
if str(GPU_BENCH) not in sys.path:
    sys.path.insert(0, str(GPU_BENCH))

from heldout_driver import record_code, timer_code  # noqa: E402


def compile_program(name: str, case: dict[str, Any], dry: bool, recorded: bool = True) -> None:
    """Compile the timing process of the program as written and of each fix, and (with
    ``recorded``) its recording process; a SyntaxError names the program and the fix."""
    device = "cpu" if dry else "cuda"
    for fix in [None, *case["fixes"]]:
        compile(timer_code(case, fix, device, dry), f"{name}/{fix}", "exec")
    if recorded:
        compile(record_code(name, case, device, dry, 3), f"{name}/record", "exec")


def assert_fixes_named(cases: dict[str, Any], unnamed: set[tuple[str, str]],
                       fix_names: set[str]) -> None:
    """Each program has two fixes or more, each with two match words or more, the first a
    fix autoprof can offer (`fix_names`) unless the pair is in `unnamed` (a fix no catalogue
    fix names), and every pair in `unnamed` is one of the set's."""
    for name, case in cases.items():
        assert len(case["fixes"]) >= 2, name
        for label, fix in case["fixes"].items():
            assert len(fix["match"]) >= 2, (name, label)
            if (name, label) not in unnamed:
                assert fix["match"][0] in fix_names, (name, label, fix["match"][0])
    assert unnamed <= {(n, f) for n, case in cases.items() for f in case["fixes"]}


def assert_graph_fixes_capture(cases: dict[str, Any], at_least: int) -> None:
    """At least `at_least` programs have a CUDA graph fix, each with the capture helper in
    its setup."""
    graphs = [name for name, case in cases.items() if "cuda_graph" in case["fixes"]]
    assert len(graphs) >= at_least
    for name in graphs:
        assert "def capture(step" in cases[name]["setup"], name


def assert_tiny_truth(truth: dict[str, Any], cases: dict[str, Any], out: Path) -> None:
    """A `--tiny` run's truth: the one in `out`, every program and fix timed once on the
    CPU, every program recorded and its run in `out`'s runs.tar.gz (the folder removed)."""
    import json
    import tarfile

    assert truth == json.loads((out / "truth.json").read_text())
    assert set(truth["cases"]) == set(cases)
    assert truth["meta"]["dry_run"] and truth["meta"]["rounds"] == 1
    assert not (out / "runs").exists()
    with tarfile.open(out / "runs.tar.gz") as tar:
        members = set(tar.getnames())
    for name, entry in truth["cases"].items():
        assert entry["as_written_ms_median"] > 0, name
        assert set(entry["fixes"]) == set(cases[name]["fixes"]), name
        for label, fix in entry["fixes"].items():
            assert fix["ms_median"] > 0 and fix["speedup"] > 0, (name, label)
        assert entry["record"]["error"] is None and entry["record"]["run"], name
        assert f"{entry['record']['run']}/manifest.json" in members, name


def assert_graph_fix_programs(cases: dict[str, Any], sources: dict[str, Any]) -> None:
    """A graph-fix set's programs: each has one fix, ``cuda_graph``, named by the graph's
    advice, keeps its source set's iteration as written and captures it in its setup."""
    for name, case in cases.items():
        assert list(case["fixes"]) == ["cuda_graph"], name
        assert "cuda-graph" in case["fixes"]["cuda_graph"]["match"], name
        assert case["base"] == sources[name]["base"], name
        assert "capture(" in case["setup"] and "FIXED == 'cuda_graph'" in case["setup"], name


def assert_dry_graph_truth(truth: dict[str, Any], cases: dict[str, Any]) -> None:
    """A graph-fix set's ``--dry-run`` truth: every program and its graph timed once."""
    assert truth["meta"]["dry_run"] and set(truth["cases"]) == set(cases)
    for name, entry in truth["cases"].items():
        for side, rows in entry["rounds"].items():
            assert len(rows) == 1 and rows[0].get("ms_per_iter", 0) > 0, (name, side, rows)
        assert entry["fixes"]["cuda_graph"]["speedup"] > 0
