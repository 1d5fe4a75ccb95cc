"""CUPTI let go when autoprof's profiling window ends, so the program's later launches are not
slowed by a profiler that no longer records.

Kineto subscribes CUPTI's callbacks when a trace with CUDA activities starts, and unless
told to tear CUPTI down (``TEARDOWN_CUPTI=1``) leaves them on every later kernel launch and
runtime call of the process after the trace stops. On an H200 with torch 2.11 (CUDA 13),
a program's first calls after autoprof's window ran 1.2-1.7x slower than its own untraced
calls before it (docs/gpu-validation.md, "After the window"). autoprof therefore sets
``TEARDOWN_CUPTI=1`` just before the window's last trace stops, and puts the variable back as
it was once the profiler stops:

- only when the run records CUDA and the user did not set ``TEARDOWN_CUPTI`` (theirs wins);
- only on CUDA 12.6 or newer, where Kineto itself makes teardown the default: older CUDA
  versions crash re-initialising CUPTI after a teardown in programs that use CUDA graphs
  (torch's ``prepare_trace`` turns teardown off for inductor's CUDA graphs itself);
- only for the last stop: Kineto reads the variable whenever a trace is reset, as one stops
  and as the next one is prepared, and finishes a teardown in a later CUDA call. Set before
  the source-lines step's own profiler stopped, or only before torch's trace was prepared,
  the teardown landed inside torch's trace, which then held no kernel (the H200, torch 2.11,
  CUDA 13); Kineto's code says the same of a cycle's stop before the next cycle.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping

TEARDOWN_ENV = "TEARDOWN_CUPTI"
SAFE_FROM_CUDA = (12, 6)  # teardown re-initialises reliably from this CUDA version on


def cuda_version_tuple(version: str | None) -> tuple[int, ...] | None:
    """``"13.0"`` -> ``(13, 0)``; None for a build without CUDA or an unreadable version."""
    if not version:
        return None
    try:
        return tuple(int(part) for part in version.split(".")[:2])
    except ValueError:
        return None


def teardown_wanted(activities: tuple[str, ...], cuda_version: str | None,
                    environ: Mapping[str, str]) -> bool:
    """Whether autoprof sets ``TEARDOWN_CUPTI=1`` for a run (the module doc's conditions)."""
    version = cuda_version_tuple(cuda_version)
    return ("cuda" in activities and TEARDOWN_ENV not in environ
            and version is not None and version >= SAFE_FROM_CUDA)


class CuptiTeardown:
    """``TEARDOWN_CUPTI=1`` from :meth:`set` until :meth:`restore`, where wanted."""

    def __init__(self, environ: MutableMapping[str, str] | None = None) -> None:
        self._environ = os.environ if environ is None else environ
        self.active = False

    def set(self, activities: tuple[str, ...], cuda_version: str | None) -> None:
        """Ask Kineto to tear CUPTI down when this run's trace stops."""
        if teardown_wanted(activities, cuda_version, self._environ):
            self._environ[TEARDOWN_ENV] = "1"
            self.active = True

    def restore(self) -> None:
        """Put the variable back as the user had it (unset); torch may have changed it."""
        if self.active:
            self._environ.pop(TEARDOWN_ENV, None)
            self.active = False
