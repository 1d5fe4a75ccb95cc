"""Reading a run folder's ``whatif.json``: the fixes autoprof tried on the user's function.

Written by ``autoprof.record.whatif`` (``autoprof.check(..., try_fixes=...)``): an object with
``schema_version`` and ``results``, a list of one record per fix (``fix``, ``applicable``,
``reason``, ``status``, ``baseline_us``, ``fixed_us``, ``speedup``, ``outputs_match``,
``max_abs_error``, ``setup_s``, ...). A run without the file has no results (``[]``); a file
that is not such an object, or a result whose number field holds something else
(``speedup: "fast"``), raises TraceError naming it (``whatif_or_warn`` in
autoprof/analysis/analysis.py turns that into a warning and completes each fixed run's verdict,
for the summary).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from autoprof.analysis.loader.errors import TraceError
from autoprof.runfolder import confine
from autoprof.runfolder.whatif import (
    MAX_WHATIF_BYTES,
    WHATIF_NAME,
    WHATIF_SCHEMA_VERSION,
    WhatIfRecord,
    measured_win,
)

REQUIRED = ("fix", "applicable")
NUMBERS = ("speedup", "measured_speedup", "speedup_low", "speedup_high", "baseline_us",
           "fixed_us", "setup_s", "max_abs_error", "break_even_calls", "same_inputs_us",
           "same_inputs_speedup", "same_inputs_speedup_low",
           "same_inputs_speedup_high")  # a number or missing


def read_whatif(run_path: str | Path | None) -> list[dict[str, Any]]:
    """The result records of ``<run_path>/whatif.json``; ``[]`` when there is none."""
    if run_path is None or not Path(run_path).is_dir():
        return []
    path = Path(run_path) / WHATIF_NAME
    try:  # inside the run folder, a regular file, small (runfolder.confine)
        if not path.is_symlink() and not path.exists():
            return []
        raw = json.loads(confine.read_regular(path, MAX_WHATIF_BYTES, folder=Path(run_path)))
    except confine.ReadRefused as refused:
        raise TraceError(path, refused.problem) from None
    except OSError as exc:
        raise TraceError(path, f"cannot read: {exc.strerror or exc}") from None
    except (ValueError, RecursionError) as exc:
        raise TraceError(path, f"not valid JSON ({exc})") from None
    return _results(path, raw)


def _results(path: Path, raw: Any) -> list[dict[str, Any]]:
    if not isinstance(raw, dict) or not isinstance(raw.get("results"), list):
        found = sorted(raw)[:10] if isinstance(raw, dict) else type(raw).__name__
        raise TraceError(path, f"expected an object with a 'results' list (found: {found})")
    version = raw.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise TraceError(path, f"schema_version {version!r} is not a positive integer")
    if version > WHATIF_SCHEMA_VERSION:
        raise TraceError(path, f"schema_version {version} is newer than this autoprof reads "
                               f"({WHATIF_SCHEMA_VERSION}); upgrade autoprof")
    out = []
    for i, record in enumerate(raw["results"]):
        if not isinstance(record, dict) or any(k not in record for k in REQUIRED):
            raise TraceError(path, f"results[{i}] is not a record with {list(REQUIRED)}")
        problem = wrong_type(record)
        if problem:
            raise TraceError(path, problem)
        out.append(record)
    try:  # typed when read: the same record the writer built (runfolder/whatif.py)
        typed = WhatIfRecord.from_dict({**raw, "results": out}, where=str(path))
    except ValueError as exc:
        raise TraceError(path, str(exc).removeprefix(f"{path}: ")) from None
    return [r.to_dict() for r in typed.results]


def wrong_type(record: dict[str, Any]) -> str | None:
    """The first field of a result that should be a number and is not, as one line naming
    the fix, the field and its value (each shortened); None when every one is a number or
    missing. The one rule for the CLI and the viewer: such a file is not drawn or printed."""
    for key in NUMBERS:
        value = record.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            return (f"fix {str(record.get('fix'))[:80]!r}: {key} is {str(value)[:80]!r}, "
                    "not a number")
    return None


def whatif_problem(run_path: str | Path | None) -> str | None:
    """Why ``<run_path>/whatif.json`` cannot be read (one line naming the file), or None."""
    try:
        read_whatif(run_path)
    except TraceError as err:
        return str(err)
    return None


def best_fix(results: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The result that ``measured_win`` with the largest speedup, or None."""
    good = [r for r in results
            if measured_win(r.get("status"), r.get("outputs_match"), r.get("speedup"))]
    return max(good, key=lambda r: float(r["speedup"]), default=None)


def measured_for(results: list[dict[str, Any]], finding: str) -> list[dict[str, Any]]:
    """The results of the fixes a finding (a diagnostic id, an opportunity's cause, the
    verdict) suggested, in the order they were tried."""
    return [r for r in results if finding in (r.get("suggested_by") or [])]
