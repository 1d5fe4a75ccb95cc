"""Watching a decorated function after its first window, and recording it again on a
trigger: ``@autoprof(watch=True)``, ``autoprof.trigger()``, SIGUSR2, a call number, a drift
of its step time. :mod:`.config` holds the options, :mod:`.watcher` the step times and the
triggers (no torch), :mod:`.window` the triggered windows, :mod:`.signals` the explicit
triggers."""

from __future__ import annotations

from autoprof.record.watch.config import Watch
from autoprof.record.watch.signals import trigger

__all__ = ["Watch", "trigger"]
