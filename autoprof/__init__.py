"""autoprof: decorate a PyTorch function, get a profile that says why it is slow.

``import autoprof`` never imports torch: the decorator imports it on first use, and the
analysis layer (``autoprof.load`` and friends) never does, so the viewer and the CLI start
fast and work where torch is absent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if __name__ != "autoprof":  # pragma: no cover - covered in a child process
    # e.g. `from autoprof import autoprof` run beside a clone named autoprof: Python takes
    # that folder (no __init__.py) for a namespace package and this file for its submodule
    import os

    raise ImportError(
        f"autoprof was imported as {__name__!r} from {__file__}: the folder "
        f"{os.path.dirname(os.path.dirname(os.path.abspath(__file__)))} (no __init__.py, "
        "e.g. a clone of the repository) hides the installed package; run from another folder"
    )

import sys  # noqa: E402 - after the check above

from autoprof._lazy import CallablePackage, lazy_names  # noqa: E402
from autoprof._version import __version__  # noqa: E402

if TYPE_CHECKING:
    from autoprof.analysis import Run, TraceError, load
    from autoprof.analysis.diff import diff
    from autoprof.record.api import autoprof
    from autoprof.record.check import check
    from autoprof.record.decorator import flush, region
    from autoprof.record.options import Schedule
    from autoprof.record.warn import AutoprofWarning
    from autoprof.record.watch import Watch, trigger
    from autoprof.record.whatif.ab import compare

__all__ = [
    "__version__",
    "autoprof",
    "region",
    "check",
    "flush",
    "AutoprofWarning",
    "Schedule",
    "Watch",
    "trigger",
    "load",
    "Run",
    "TraceError",
    "diff",
    "compare",
]

# name -> module that defines it; resolved on first attribute access (PEP 562).
_LAZY: dict[str, str] = {
    "autoprof": "autoprof.record.api",
    "region": "autoprof.record.decorator",
    "check": "autoprof.record.check",
    "flush": "autoprof.record.decorator",
    "AutoprofWarning": "autoprof.record.warn",
    "Schedule": "autoprof.record.options",
    "Watch": "autoprof.record.watch",
    "trigger": "autoprof.record.watch",
    "load": "autoprof.analysis",
    "Run": "autoprof.analysis",
    "TraceError": "autoprof.analysis",
    "diff": "autoprof.analysis.diff",
    "compare": "autoprof.record.whatif.ab",
}

__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals(), __all__)

# `import autoprof` then `@autoprof(...)`: the package object itself is the decorator too
sys.modules[__name__].__class__ = CallablePackage
