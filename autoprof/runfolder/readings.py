"""What a run's record says beyond its own fields: the decorator's options (``options``) and
the keys a recorder adds (``extra``), each read by one rule here. ``Manifest`` inherits these
properties, so a reader asks ``record.schedule`` or ``record.problem_size`` and never probes
the record's dicts itself.

No torch, no pandas: the standard library only.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

# The keys that name a run's problem size, in the order they are looked for: first in the
# record's own keys (``extra``), then in the decorator's options.
SIZE_KEYS = ("size", "n", "problem_size")


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _count(value: object) -> int | None:
    number = _int(value)
    return number if number is not None and number >= 0 else None


class Readings:
    """The typed readings of a record's ``options``, ``extra`` and ``device``."""

    if TYPE_CHECKING:
        @property
        def options(self) -> dict[str, Any]: ...

        @property
        def extra(self) -> dict[str, Any]: ...

        @property
        def device(self) -> dict[str, Any] | None: ...

    @property
    def schedule(self) -> dict[str, Any]:
        """The profiler schedule the run was recorded with (``options.schedule``); ``{}``
        when not recorded."""
        schedule = self.options.get("schedule")
        return schedule if isinstance(schedule, dict) else {}

    @property
    def repeat(self) -> int:
        """The schedule's ``repeat`` (``0``: cycles until stopped); 1 when not recorded."""
        value = _count(self.schedule.get("repeat"))
        return 1 if value is None else value

    @property
    def active(self) -> int:
        """Steps recorded per schedule cycle; 0 when not recorded."""
        value = _count(self.schedule.get("active"))
        return 0 if value is None else value

    @property
    def warmup_calls(self) -> int | None:
        """The decorator's ``warmup_calls`` option (untraced calls before profiling; older
        runs wrote it as ``warmup`` only), not the schedule's ``warmup`` steps; None when not
        recorded as an integer."""
        calls = self.options.get("warmup_calls", self.options.get("warmup"))
        return _int(calls)

    @property
    def device_name(self) -> str | None:
        """``device.name`` as the recorder wrote it; None on a CPU-only run."""
        name = self.device.get("name") if self.device is not None else None
        return name if isinstance(name, str) else None

    @property
    def device_memory_bytes(self) -> dict[str, int]:
        """``{"cuda:<index>": device.properties.total_memory}``; ``{}`` when not recorded."""
        device = self.device or {}
        props = device.get("properties")
        total = _int(props.get("total_memory")) if isinstance(props, dict) else None
        if total is None:
            return {}
        index = device.get("index")
        return {f"cuda:{index if isinstance(index, int) else 0}": total}

    @property
    def intra_op_threads(self) -> int | None:
        """torch's intra-op thread count, when the recorder wrote it."""
        return _int(self.extra.get("intra_op_threads"))

    @property
    def cudnn_benchmark(self) -> bool | None:
        """``torch.backends.cudnn.benchmark`` in the recorded program, when the recorder wrote
        it (older runs did not: None, not known)."""
        value = self.extra.get("cudnn_benchmark")
        return value if isinstance(value, bool) else None

    @property
    def call_inputs(self) -> tuple[str, ...] | None:
        """The decorated call's arguments as recorded (dtype and shape of each tensor, type of
        anything else), when the recorder wrote them."""
        value = self.extra.get("call_inputs")
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return None
        return tuple(value)

    @property
    def cpus(self) -> int | None:
        """The CPUs the recording process could use, when the recorder wrote it."""
        return _int(self.extra.get("cpus"))

    @property
    def call_input_bytes(self) -> int | None:
        """The bytes of the decorated call's CUDA tensor arguments (what a CUDA graph of the
        call copies into its static inputs each replay), when the recorder wrote them."""
        return _count(self.extra.get("call_input_bytes"))

    @property
    def profiler_start_ms(self) -> float | None:
        """How much longer the call where the profiler started took (torch's trace setup,
        outside the measured steps), when the recorder wrote it as a finite number."""
        value = self.extra.get("profiler_start_ms")
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return float(value) if math.isfinite(value) else None

    @property
    def window_budget(self) -> dict[str, Any] | None:
        """The budget the window was fitted to (``budget``: ``Watch.max_trace_mb`` and
        ``max_host_mb``, what was predicted, kept, and why), when the recorder wrote it."""
        value = self.extra.get("budget")
        return value if isinstance(value, dict) else None

    @property
    def problem_size(self) -> float | None:
        """The first number (not a bool) under ``SIZE_KEYS``, in the record's own keys, then
        in the decorator's options; None when neither names one."""
        for source in (self.extra, self.options):
            for key in SIZE_KEYS:
                value = source.get(key)
                if isinstance(value, int | float) and not isinstance(value, bool):
                    return float(value)
        return None
