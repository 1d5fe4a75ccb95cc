"""Options and Schedule: validation, torch's own schedule semantics, environment variables."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from torch.profiler import ProfilerAction, ProfilerActivity, schedule

from autoprof._options import Schedule, env_enabled, make_options

pytestmark = pytest.mark.filterwarnings("ignore:Profiler won.t be using warmup")

TORCH_PHASE = {
    ProfilerAction.NONE: ("wait", "done"),
    ProfilerAction.WARMUP: ("profiler_warmup",),
    ProfilerAction.RECORD: ("active",),
    ProfilerAction.RECORD_AND_SAVE: ("last_active",),
}


@pytest.mark.parametrize(
    "wait, warmup, active, repeat, skip_first",
    list(itertools.product([0, 1, 2], [0, 1], [1, 3], [0, 1, 2], [0, 2])),
)
def test_phase_at_matches_torch_schedule(wait, warmup, active, repeat, skip_first):
    ours = Schedule(wait=wait, warmup=warmup, active=active, repeat=repeat, skip_first=skip_first)
    theirs = schedule(
        wait=wait, warmup=warmup, active=active, repeat=repeat, skip_first=skip_first
    )
    recorded = 0
    for step in range(40):
        assert ours.phase_at(step) in TORCH_PHASE[theirs(step)], step
        assert ours.recorded_steps(step) == recorded
        recorded += theirs(step) in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)


def test_schedule_defaults_and_totals():
    s = Schedule()
    assert s.as_dict() == {"wait": 1, "warmup": 1, "active": 3, "repeat": 1, "skip_first": 0}
    assert s.total_steps == 5
    assert Schedule(repeat=0).total_steps is None
    assert Schedule(wait=0, warmup=0, active=2, repeat=3, skip_first=1).total_steps == 7
    assert Schedule.coerce({"active": 2}) == Schedule(active=2)
    assert Schedule.coerce(None) == Schedule()


@pytest.mark.parametrize("bad", [{"wait": -1}, {"active": 0}, {"repeat": 1.5}, {"warmup": True}])
def test_schedule_rejects_bad_values(bad):
    with pytest.raises(ValueError, match="Schedule"):
        Schedule(**bad)


def test_schedule_of_wrong_type():
    with pytest.raises(TypeError, match="dict or autoprof.Schedule"):
        Schedule.coerce([1, 1, 3])


def test_options_accept_torch_activities_and_paths(tmp_path):
    opts = make_options(activities=[ProfilerActivity.CPU], out_dir=tmp_path)
    assert opts.activities == ("cpu",)
    assert opts.resolved_out_dir() == tmp_path
    assert make_options(activities="cuda").activities == ("cuda",)
    with pytest.raises(ValueError, match="activities"):
        make_options(activities=["tpu"])


def test_out_dir_env_and_default(monkeypatch):
    monkeypatch.setenv("AUTOPROF_DIR", "/somewhere/else")
    assert make_options().resolved_out_dir() == Path("/somewhere/else")
    monkeypatch.delenv("AUTOPROF_DIR")
    assert make_options().resolved_out_dir() == Path("traces")


@pytest.mark.parametrize("value, enabled", [("0", False), ("off", False), ("FALSE", False),
                                            ("1", True), ("", True)])
def test_env_switch(monkeypatch, value, enabled):
    monkeypatch.setenv("AUTOPROF", value)
    assert env_enabled() is enabled


def test_manifest_form_is_json_ready():
    opts = make_options(name="x", schedule={"wait": 0, "active": 1})
    data = opts.as_manifest()
    assert data["schedule"] == {"wait": 0, "warmup": 1, "active": 1, "repeat": 1, "skip_first": 0}
    assert data["activities"] is None and data["name"] == "x"
