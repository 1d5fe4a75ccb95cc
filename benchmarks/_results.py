"""The head and the end every standalone benchmark's results file shares: when, the command,
the machine; then the JSON printed and, with ``--out``, written."""

from __future__ import annotations

import datetime
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any


def stamp(script: str, argv: list[str] | None, **machine: Any) -> dict[str, Any]:
    """``date_utc``, ``command`` (``python benchmarks/<script> ARGS``) and ``machine`` (CPU
    count, platform, Python, and the ``machine`` keywords given)."""
    return {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(["python", f"benchmarks/{script}", *(argv or sys.argv[1:])]),
        "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                    "python": sys.version.split()[0], **machine},
    }


def emit(result: dict[str, Any], out: Path | None) -> None:
    """Print ``result`` as indented JSON and write it to ``out`` when given."""
    text = json.dumps(result, indent=1)
    print(text)
    if out is not None:
        out.write_text(text + "\n")
