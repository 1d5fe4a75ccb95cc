"""What the recording process writes into the run folder while it records."""

from __future__ import annotations

import json

import torch

from autoprof import autoprof


def test_each_exported_cycle_updates_steps_recorded_in_the_recording_manifest(traces_root):
    """Should the process die after a cycle, the folder itself says how many recorded steps
    its traces hold: the finisher reads ``steps_recorded`` instead of re-deriving it."""

    @autoprof(name="cycles", warmup=0, schedule=dict(wait=1, warmup=1, active=2, repeat=2))
    def f(x):
        return x + 1

    session = f.autoprof_session  # type: ignore[attr-defined]
    for _ in range(4):  # one whole cycle: wait, warmup, two active steps
        f(torch.ones(1))
    on_disk = json.loads((session.run_dir / "manifest.json").read_bytes())
    assert on_disk["status"] == "recording" and on_disk["steps_recorded"] == 2
    for _ in range(4):
        f(torch.ones(1))
    session.flush()
    final = json.loads((session.run_dir / "manifest.json").read_bytes())
    assert final["status"] == "complete" and final["steps_recorded"] == 4


def test_the_manifest_says_how_many_intra_op_threads_ran_on_how_many_cpus(traces_root):
    """The threads finding needs both: intra-op threads that outnumber the cores make every
    step slow alike, which step times alone cannot show."""
    import os

    @autoprof(name="threads", warmup=0, schedule=dict(wait=0, warmup=1, active=1))
    def f(x):
        return x + 1

    for _ in range(2):
        f(torch.ones(1))
    f.autoprof_session.flush()  # type: ignore[attr-defined]
    run_dir = f.autoprof_session.run_dir  # type: ignore[attr-defined]
    written = json.loads((run_dir / "manifest.json").read_bytes())
    assert written["intra_op_threads"] == torch.get_num_threads()
    assert 1 <= written["cpus"] <= (os.cpu_count() or 1)

    from autoprof.runfolder import MAX_MANIFEST_BYTES, read_manifest

    record = read_manifest(run_dir / "manifest.json", MAX_MANIFEST_BYTES)
    assert record.intra_op_threads == torch.get_num_threads() and record.cpus == written["cpus"]
