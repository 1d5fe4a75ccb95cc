"""The label of each recorded step: torch's ``record_function`` ops called without the
Python layers of its class.

``torch.autograd.profiler.record_function`` is a Python object whose ``__init__``,
``__enter__`` and ``__exit__`` call ``torch.jit.annotate``, ``torch.jit.is_scripting`` (three
times) and the CUPTI monitor's check before and after the two ops that make the label
(``profiler::_record_function_enter_new`` and ``profiler::_record_function_exit``). A
recorded step pays for all of it once per call. :class:`StepLabel` calls the same two ops the
same way (the exit with ``__torch_function__`` subclass handling off, as torch does), so the
trace holds the same label; where torch's experimental CUPTI monitor is collecting, the
session keeps torch's class, which also hands the label to that monitor.
"""

from __future__ import annotations

import sys
from typing import Any

from autoprof.record.session.driver import record_function, torch_module


def _cupti_monitor_collecting() -> bool:
    """Is torch's experimental CUPTI monitor collecting (its module loaded and started)?"""
    monitor = sys.modules.get("torch.profiler._cupti_monitor")
    get_monitor = getattr(monitor, "get_monitor", None)
    return get_monitor is not None and get_monitor() is not None


def step_label() -> Any:
    """The class that labels autoprof's steps: :class:`StepLabel` bound to torch's ops, or
    torch's ``record_function`` where those ops are missing or the CUPTI monitor collects."""
    torch = torch_module()
    try:
        ops = torch.ops.profiler
        enter = ops._record_function_enter_new
        leave = ops._record_function_exit._RecordFunction
        no_subclass = torch._C.DisableTorchFunctionSubclass
    except (AttributeError, RuntimeError):  # pragma: no cover - a torch without them
        return record_function()
    if _cupti_monitor_collecting():
        return record_function()

    class StepLabel:
        """``with StepLabel(name):`` labels the block ``name`` in the trace, as
        ``record_function(name)`` does."""

        __slots__ = ("name", "_handle")

        def __init__(self, name: str) -> None:
            self.name = name

        def __enter__(self) -> StepLabel:
            self._handle = enter(self.name, None)
            return self

        def __exit__(self, *exc_info: object) -> None:
            with no_subclass():
                leave(self._handle)

    return StepLabel
