"""Options and the profiler schedule: plain data, validated once, no torch import.

Every knob of ``@autoprof(...)`` lands in one frozen :class:`Options`. Environment variables:

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

Activity = Literal["cpu", "cuda"]
# Where a profiled call falls in the schedule ("warmup" is the untraced warm-up before it).
Phase = Literal["warmup", "wait", "profiler_warmup", "active", "last_active", "done", "export"]

DEFAULT_OUT_DIR = "traces"


@dataclass(frozen=True)
class Schedule:
    """torch.profiler's schedule, with torch's own keys.

    One cycle is ``wait`` idle steps, ``warmup`` steps with the profiler on but discarded, and
    ``active`` recorded steps; the cycle runs ``repeat`` times (``repeat=0``: forever, one trace
    per cycle, until the program ends or ``autoprof.flush()``), after ``skip_first`` steps.
    """

    wait: int = 1
    warmup: int = 1
    active: int = 3
    repeat: int = 1
    skip_first: int = 0

    def __post_init__(self) -> None:
        for key in ("wait", "warmup", "active", "repeat", "skip_first"):
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
        return self.skip_first + self.cycle_steps * self.repeat

    def as_dict(self) -> dict[str, int]:
        return asdict(self)

    def phase_at(self, step: int) -> Phase:
        """The phase of profiler step ``step`` (0-based), as torch.profiler.schedule sees it."""
        if step < self.skip_first:
            return "wait"
        k = step - self.skip_first
        if self.repeat and k >= self.cycle_steps * self.repeat:
            return "done"
        pos = k % self.cycle_steps
        if pos < self.wait:
            return "wait"
        if pos < self.wait + self.warmup:
            return "profiler_warmup"
        return "active" if pos < self.cycle_steps - 1 else "last_active"

    def recorded_steps(self, steps_done: int) -> int:
        """How many of the first ``steps_done`` steps were active (recorded) steps."""
        k = max(0, steps_done - self.skip_first)
        if self.repeat:
            k = min(k, self.cycle_steps * self.repeat)
        full, rem = divmod(k, self.cycle_steps)
        return full * self.active + max(0, rem - self.wait - self.warmup)

    @classmethod
    def coerce(cls, value: Schedule | Mapping[str, int] | None) -> Schedule:
        if value is None:
            return cls()
        if isinstance(value, Schedule):
            return value
        if isinstance(value, Mapping):
            unknown = sorted(set(value) - {"wait", "warmup", "active", "repeat", "skip_first"})
            if unknown:
                raise ValueError(
                    f"unknown schedule keys {unknown}; torch.profiler.schedule takes "
                    "wait, warmup, active, repeat, skip_first"
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
    warmup: int = 3
    schedule: Schedule = field(default_factory=Schedule)
    out_dir: str | None = None
    activities: tuple[Activity, ...] | None = None
    record_shapes: bool = True
    profile_memory: bool = False
    with_stack: bool = False
    with_flops: bool = True
    with_modules: bool = False
    sync: bool = False
    enabled: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.warmup, int) or isinstance(self.warmup, bool) or self.warmup < 0:
            raise ValueError(f"warmup must be an int >= 0 (untraced calls), got {self.warmup!r}")
        if self.activities is not None:
            bad = [a for a in self.activities if a not in ("cpu", "cuda")]
            if bad:
                raise ValueError(f"activities must be 'cpu' and/or 'cuda', got {bad}")

    def resolved_out_dir(self) -> Path:
        if self.out_dir is not None:
            return Path(self.out_dir)
        return env.out_dir(DEFAULT_OUT_DIR)

    def as_manifest(self) -> dict[str, Any]:
        data = asdict(self)
        data["schedule"] = self.schedule.as_dict()
        data["activities"] = list(self.activities) if self.activities is not None else None
        return data


def make_options(**kwargs: Any) -> Options:
    """Build Options from decorator keywords, with a clear error for a misspelled one."""
    known = set(Options.__dataclass_fields__)
    unknown = sorted(set(kwargs) - known)
    if unknown:
        raise TypeError(f"autoprof got unknown option(s) {unknown}; known: {sorted(known)}")
    if "schedule" in kwargs:
        kwargs["schedule"] = Schedule.coerce(kwargs["schedule"])
    if kwargs.get("activities") is not None:
        acts = kwargs["activities"]
        acts = [acts] if isinstance(acts, str) else list(acts)
        # accept torch.profiler.ProfilerActivity members too (their .name is CPU / CUDA)
        kwargs["activities"] = tuple(str(getattr(a, "name", a)).lower() for a in acts)
    if kwargs.get("out_dir") is not None:
        kwargs["out_dir"] = os.fspath(kwargs["out_dir"])
    return Options(**kwargs)


def env_enabled() -> bool:
    """False when the environment switches autoprof off (``AUTOPROF=0``)."""
    return env.enabled()
