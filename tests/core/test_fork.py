"""os.fork(): a child never touches its parent's runs. Each program runs in its own process
(forking pytest itself would copy the whole test run); children end with ``os._exit``, the
way to avoid Kineto's exit hang in a child once a profiler ran (docs/reliability.md)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.core.conftest import manifest, only_run, run_dirs, trace_files

REPO = Path(__file__).resolve().parents[2]

FORK_IN_STEP = """
    import os, sys, torch
    from autoprof import autoprof

    @autoprof(name="parent", warmup=0, schedule=dict(wait=0, warmup=1, active=3))
    def step(x, fork):
        if fork:
            pid = os.fork()
            if pid == 0:
                raise SystemExit(3)  # the child leaves through the parent's recorded step
            os.waitpid(pid, 0)
        return x * 2

    @autoprof(name="untouched", warmup=1)
    def other(x):
        return x + 1

    for i in range(4):
        try:
            step(torch.ones(1), fork=(i == 1))
        except SystemExit:  # only the child gets here
            assert other(torch.ones(1)).item() == 2  # a parent's session: pass-through
            for _ in range(4):
                assert step(torch.ones(1), fork=False).item() == 2
            os._exit(0)
    print("PARENT", os.getpid(), flush=True)
"""


def test_a_child_forked_in_a_step_leaves_the_parents_run_alone(traces_root):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(FORK_IN_STEP)],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    parent_pid = int(done.stdout.split("PARENT")[1].split()[0])
    m = manifest(only_run(traces_root, "parent"))
    assert m["pid"] == parent_pid
    assert m["status"] == "complete" and m["error"] is None and m["steps_recorded"] == 3
    traces = trace_files(only_run(traces_root, "parent"))
    assert len(traces) == 1 and f"_{parent_pid}." in traces[0].name  # none from the child
    assert run_dirs(traces_root, "untouched") == []  # the child started no run of it


def test_after_fork_handler_detaches_every_session():
    import torch

    from autoprof import autoprof
    from autoprof.record.session.owner import registry

    @autoprof(name="detach", warmup=0, schedule=dict(wait=0, warmup=1, active=3))
    def f(x):
        return x

    f(torch.ones(1))  # profiling: the parent's profiler runs
    session = f.autoprof_session  # type: ignore[attr-defined]
    assert session._prof is not None and registry.live is session
    saved = (session._prof, session._run, session._finisher, session.state, session._owner)
    try:
        registry.after_fork_in_child()  # what os.fork() runs in the child
        assert registry.live is None and session.done
        assert session._prof is None and session._run is None and session._finisher is None
        assert session not in registry.sessions  # the child's exit flush never sees it
    finally:  # give the parent (this process) its run back, then end it properly
        (session._prof, session._run, session._finisher, session.state,
         session._owner) = saved
        session.done = False
        registry.live = session
        registry.sessions.add(session)
        session.flush()
