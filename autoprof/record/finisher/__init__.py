"""The finisher: the process that turns a recorded run folder into a finished one.

:mod:`.folder` finishes a folder (the traces compressed and checked, the tables, the final
manifest; its ``main`` is ``python -m autoprof.finish``), :mod:`.after_window` times the
first calls after the profiling window from what the recording hands over, and
:mod:`.cpu_gate` keeps the finisher off the program's cores while they are busy. The user's
side, which starts the finisher and hands the run over, is :mod:`autoprof.record.export`.

The names below resolve on first use, so that importing :mod:`.cpu_gate` (the finisher's
first wait) loads only the standard library.
"""

from autoprof._lazy import lazy_names

__all__ = ["FinishError", "finish_folder", "main"]

__getattr__, __dir__ = lazy_names(__name__, dict.fromkeys(__all__, f"{__name__}.folder"),
                                  globals(), __all__)
