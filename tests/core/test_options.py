"""Options and Schedule: validation, torch's own schedule semantics, environment variables."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from torch.profiler import ProfilerAction, ProfilerActivity, schedule

from autoprof.record.options import Schedule, env_enabled, make_options

pytestmark = pytest.mark.filterwarnings("ignore:Profiler won.t be using warmup")


def _torch_total_steps(fn, limit: int = 80) -> int:
    """Steps until torch's schedule function does nothing any more (its last non-NONE + 1)."""
    return 1 + max((i for i in range(limit) if fn(i) != ProfilerAction.NONE), default=-1)


@pytest.mark.parametrize(
    "wait, warmup, active, repeat, skip_first, skip_first_wait",
    list(itertools.product([0, 1, 2], [0, 1], [1, 3], [1, 2], [0, 2], [0, 1])),
)
def test_total_steps_matches_torch_schedule(wait, warmup, active, repeat, skip_first,
                                            skip_first_wait):
    keys = dict(wait=wait, warmup=warmup, active=active, repeat=repeat,
                skip_first=skip_first, skip_first_wait=skip_first_wait)
    assert Schedule(**keys).total_steps == _torch_total_steps(schedule(**keys))


def test_schedule_defaults_and_totals():
    s = Schedule()
    assert s.as_dict() == {"wait": 1, "warmup": 2, "active": 3, "repeat": 1, "skip_first": 0,
                           "skip_first_wait": 0}
    assert s.total_steps == 6
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
    assert data["schedule"] == {"wait": 0, "warmup": 2, "active": 1, "repeat": 1, "skip_first": 0,
                                "skip_first_wait": 0}
    assert data["activities"] is None and data["name"] == "x"
    assert data["warmup_calls"] == data["warmup"] == 3  # readers of older runs read "warmup"


def test_warmup_calls_and_its_older_name():
    assert make_options(warmup_calls=5).warmup_calls == 5
    assert make_options(warmup=2).warmup_calls == 2  # the older name is still accepted
    assert make_options(warmup=2).warmup == 2
    with pytest.raises(TypeError, match="not both"):
        make_options(warmup=1, warmup_calls=2)
