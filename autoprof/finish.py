"""``python -m autoprof.finish RUN_DIR``: finish a run folder left ``recording``.

The finisher itself is :mod:`autoprof.record.finish`; this module is its command-line name.
"""

from __future__ import annotations

from autoprof.record.finish import main

if __name__ == "__main__":
    raise SystemExit(main())
