"""Options and the profiler schedule: plain data, validated once, no torch import.

Every knob of ``@autoprof(...)`` lands in one frozen :class:`Options`. ``warmup_calls`` (untraced
calls before the profiler starts; ``warmup=`` is accepted as its older name) is not
``Schedule.warmup`` (torch.profiler's steps that run the profiler and discard what it saw).
Environment variables:

- ``AUTOPROF=0`` (or ``false``/``off``/``no``) disables autoprof: decorating returns the
  function itself and regions do nothing.
- ``AUTOPROF_DIR`` replaces the default output folder (``traces``) when ``out_dir`` is not
  given explicitly.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from autoprof import env
from autoprof.record.watch.config import Watch

Activity = Literal["cpu", "cuda"]
# Where a profiled call falls in the schedule ("warmup_calls": the untraced calls before it;
# "profiler_warmup": the schedule's own warmup steps).
# "lines": the step before torch's profiler first records, recorded by the source-lines profiler
# (autoprof.record.lines) with stacks and modules, never one of the measured steps.
Phase = Literal["warmup_calls", "wait", "lines", "profiler_warmup", "active", "last_active", "done",
                "export"]

DEFAULT_OUT_DIR = "traces"
_SCHEDULE_KEYS = ("wait", "warmup", "active", "repeat", "skip_first", "skip_first_wait")


@dataclass(frozen=True)
class Schedule:
    """torch.profiler's schedule, with torch's own keys.

    One cycle is ``wait`` idle steps, ``warmup`` steps with the profiler on but discarded, and
    ``active`` recorded steps; the cycle runs ``repeat`` times (``repeat=0``: forever, one trace
    per cycle, until the program ends or ``autoprof.flush()``), after ``skip_first`` steps;
    ``skip_first_wait=1`` drops the first cycle's ``wait``. The schedule function itself is
    torch's (``torch.profiler.schedule``): autoprof asks it for the phase of every step.
    """

    wait: int = 1
    warmup: int = 2
    active: int = 3
    repeat: int = 1
    skip_first: int = 0
    skip_first_wait: int = 0

    def __post_init__(self) -> None:
        for key in _SCHEDULE_KEYS:
            value = getattr(self, key)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"Schedule.{key} must be an int >= 0, got {value!r}")
        if self.active < 1:
            raise ValueError(f"Schedule.active must be >= 1, got {self.active}")

    @property
    def cycle_steps(self) -> int:
        return self.wait + self.warmup + self.active

    @property
    def total_steps(self) -> int | None:
        """Profiled calls one full schedule needs, or None when ``repeat=0`` (forever)."""
        if self.repeat == 0:
            return None
        shift = self.wait if self.skip_first_wait else 0
        return self.skip_first + self.cycle_steps * self.repeat - shift

    def as_dict(self) -> dict[str, int]:
        return asdict(self)

    @classmethod
    def coerce(cls, value: Schedule | Mapping[str, int] | None) -> Schedule:
        if value is None:
            return cls()
        if isinstance(value, Schedule):
            return value
        if isinstance(value, Mapping):
            unknown = sorted(set(value) - set(_SCHEDULE_KEYS))
            if unknown:
                raise ValueError(
                    f"unknown schedule keys {unknown}; torch.profiler.schedule takes "
                    f"{', '.join(_SCHEDULE_KEYS)}"
                )
            return cls(**dict(value))
        raise TypeError(
            f"schedule must be a dict or autoprof.Schedule, got {type(value).__name__}"
        )


@dataclass(frozen=True)
class Options:
    """Everything ``@autoprof(...)`` accepts. ``out_dir=None`` means "resolve at run start"
    (``AUTOPROF_DIR`` or ``traces``); ``activities=None`` means CPU plus CUDA when available."""

    name: str | None = None
    warmup_calls: int = 3
    schedule: Schedule = field(default_factory=Schedule)
    out_dir: str | None = None
    activities: tuple[Activity, ...] | None = None
    record_shapes: bool = True
    profile_memory: bool = False
    with_stack: bool = False
    with_flops: bool = True
    with_modules: bool = False
    # the first profiler warm-up step is recorded with stacks and modules by a second profiler
    # (record.lines): the user's line of every op, never in a measured step; only with two
    # warm-up steps or more (Schedule(warmup=2)), so that torch's profiler keeps one of its own
    source_lines: bool = True
    sync: bool = False
    enabled: bool = True
    try_fixes: str | tuple[str, ...] | None = None  # what-if: autoprof.record.whatif
    # after the first window: time every call, record again on a trigger (record.watch)
    watch: Watch | None = None

    def __post_init__(self) -> None:
        calls = self.warmup_calls
        if not isinstance(calls, int) or isinstance(calls, bool) or calls < 0:
            raise ValueError(f"warmup_calls must be an int >= 0 (untraced calls), got {calls!r}")
        if self.activities is not None:
            bad = [a for a in self.activities if a not in ("cpu", "cuda")]
            if bad:
                raise ValueError(f"activities must be 'cpu' and/or 'cuda', got {bad}")

    def resolved_out_dir(self) -> Path:
        if self.out_dir is not None:
            return Path(self.out_dir)
        return env.out_dir(DEFAULT_OUT_DIR)

    @property
    def warmup(self) -> int:
        """The older name of ``warmup_calls``."""
        return self.warmup_calls

    def as_manifest(self) -> dict[str, Any]:
        data = asdict(self)
        data["warmup"] = self.warmup_calls  # the key readers of older runs look for
        data["schedule"] = self.schedule.as_dict()
        data["activities"] = list(self.activities) if self.activities is not None else None
        return data


def make_options(**kwargs: Any) -> Options:
    """Build Options from decorator keywords, with a clear error for a misspelled one."""
    known = set(Options.__dataclass_fields__)
    unknown = sorted(set(kwargs) - known - {"warmup"})
    if unknown:
        raise TypeError(f"autoprof got unknown option(s) {unknown}; known: {sorted(known)}")
    if "warmup" in kwargs:
        if "warmup_calls" in kwargs:
            raise TypeError(
                "give warmup_calls= or its older name warmup=, not both "
                f"(warmup={kwargs['warmup']!r}, warmup_calls={kwargs['warmup_calls']!r})"
            )
        kwargs["warmup_calls"] = kwargs.pop("warmup")
    if "schedule" in kwargs:
        kwargs["schedule"] = Schedule.coerce(kwargs["schedule"])
    if "watch" in kwargs:
        kwargs["watch"] = Watch.coerce(kwargs["watch"])
    if kwargs.get("activities") is not None:
        acts = kwargs["activities"]
        acts = [acts] if isinstance(acts, str) else list(acts)
        # accept torch.profiler.ProfilerActivity members too (their .name is CPU / CUDA)
        kwargs["activities"] = tuple(str(getattr(a, "name", a)).lower() for a in acts)
    if kwargs.get("out_dir") is not None:
        kwargs["out_dir"] = os.fspath(kwargs["out_dir"])
    if kwargs.get("try_fixes") is not None and not isinstance(kwargs["try_fixes"], str):
        kwargs["try_fixes"] = tuple(kwargs["try_fixes"])
    return Options(**kwargs)


def env_enabled() -> bool:
    """False when the environment switches autoprof off (``AUTOPROF=0``)."""
    return env.enabled()
