"""One profiling session per decorated function or region name.

:mod:`.table` holds the states and what each event does in each; :mod:`.core` the session
that fires those events (with its mixins: :mod:`.steps`, :mod:`.starting`, :mod:`.fitting`,
:mod:`.interrupt`, :mod:`.after_window`, :mod:`.actions`); :mod:`.driver` drives
torch.profiler; :mod:`.writer` writes the run folder and hands the run to its finisher;
:mod:`.owner` knows which thread and which session may drive the profiler (and forgets the
parent's runs in a forked child); :mod:`.exit` finishes every run at interpreter exit.
"""

from __future__ import annotations

from autoprof.record.session.core import Session
from autoprof.record.session.driver import profiler_enabled, torch_module
from autoprof.record.session.exit import flush_all, flush_session
from autoprof.record.session.table import Event, Refused, State

__all__ = ["Event", "Refused", "Session", "State", "flush_all", "flush_session",
           "profiler_enabled", "torch_module"]
