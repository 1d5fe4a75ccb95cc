"""torch.compile around an @autoprof function: Dynamo compiles the user's function and skips
autoprof's own frames, in a fresh process (Dynamo not imported before decoration)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.core.conftest import manifest, only_run

REPO = Path(__file__).resolve().parents[2]

PROGRAM = """
    import json, sys, torch
    from autoprof import autoprof

    def f(x):
        return torch.relu(x @ x) + 1

    profiled = autoprof(name="compiled", warmup_calls=1, schedule=dict(wait=0, warmup=1, active=2))
    g = torch.compile(profiled(f), backend="eager") if sys.argv[1] == "outside" else profiled(
        torch.compile(f, backend="eager"))
    x = torch.randn(16, 16)
    for _ in range(5):
        assert torch.equal(g(x), f(x))
    from torch._dynamo.utils import counters
    print("STATS", json.dumps(dict(counters["stats"])))
"""


@pytest.mark.slow
@pytest.mark.parametrize("order", ["outside", "inside"])
def test_compile_either_side_of_autoprof_compiles_one_graph_quietly(order, traces_root):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(PROGRAM), order],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    stats = json.loads(done.stdout.split("STATS", 1)[1])
    assert stats["unique_graphs"] == 1  # f as one graph: no break at autoprof's code
    assert "Warning" not in done.stderr and "autoprof/_" not in done.stderr, done.stderr[-2000:]
    m = manifest(only_run(traces_root, "compiled"))
    assert m["status"] == "complete" and m["steps_recorded"] == 2
