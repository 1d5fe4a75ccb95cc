"""The analysis phase a page is waiting for, named on the page while it lasts.

A first open computes the run's analysis lazily, while a page draws it (steps and checks,
the replayed-fix predictions, efficiency, writing the summary cache). ``analysing(label)``
listens to the phases the analysis names (``autoprof.analysis.loader.phase``) and shows each
in one line at the top of the page, with the time since the first, then clears it; a page
whose analysis is already computed shows nothing.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import streamlit as st

from autoprof.analysis.loader.phase import listening


class PhaseSlot:
    """The phase listener: rewrites one placeholder with the phase's name and time so far."""

    def __init__(self, slot: Any, label: str) -> None:
        self.slot = slot
        self.label = label
        self.started = time.monotonic()
        self.shown: list[str] = []

    def __call__(self, name: str) -> None:
        elapsed_s = time.monotonic() - self.started
        self.shown.append(name)
        self.slot.info(f"Analysing {self.label}: {name} ({elapsed_s:.0f} s so far)")


@contextmanager
def analysing(label: str) -> Iterator[PhaseSlot]:
    """Show each analysis phase entered inside this block (module doc)."""
    slot = st.empty()
    listener = PhaseSlot(slot, label)
    try:
        with listening(listener):
            yield listener
    finally:
        slot.empty()
