"""``python -m autoprof.finish RUN_DIR``: finish a run folder left ``recording``.

The finisher itself is :mod:`autoprof.record.finisher.folder`; this module is its command-line name.
As the recording's finisher (``--watch``) it first waits, before loading the finisher's
code, while the program keeps every core busy (:mod:`autoprof.record.finisher.cpu_gate`), reading
its stdin meanwhile.
"""

from __future__ import annotations

import os
import sys


def _run() -> int:
    early = b""
    if "--watch" in sys.argv[1:]:
        from autoprof.env import finish_yield_s
        from autoprof.record.finisher.cpu_gate import CpuGate, Drain

        drain = Drain(0)
        CpuGate(os.getppid(), finish_yield_s())(drain)
        early = drain.data
    from autoprof.record.finisher.folder import main

    return main(early_input=early)


if __name__ == "__main__":
    raise SystemExit(_run())
