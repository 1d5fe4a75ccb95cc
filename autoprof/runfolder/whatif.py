"""``whatif.json`` in the run folder: written atomically, then listed in the manifest.

Typed both ways: ``whatif_record`` builds a ``WhatIfRecord`` (a result field the type does not
name is refused when written, not lost when read) and the loader reads the file back into it.

The one home of the file's name and schema version: the writer (``autoprof.record.whatif``,
which may run where the analysis cannot be imported: a GPU box with torch only) and the
reader (``autoprof.analysis.loader.whatif``) both import them from here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from autoprof.runfolder.files import MANIFEST, MAX_MANIFEST_BYTES, atomic_write_json, folder_lock
from autoprof.runfolder.manifest import ManifestError, read_manifest, write_manifest
from autoprof.runfolder.typed import UNSET, Model, Num, given

WHATIF_NAME = "whatif.json"
WHATIF_SCHEMA_VERSION = 1
MAX_WHATIF_BYTES = 16 * 1024**2


class WhatIfResult(Model, kw_only=True):
    """One fix ``check(..., try_fixes=...)`` measured (record/whatif/result.FixResult as
    whatif.json stores it, plus which signals of the run suggested it)."""

    fix: str
    doc: str | None = UNSET
    applicable: bool | None
    status: str = UNSET
    reason: str | None = UNSET
    error: Any = UNSET
    baseline_us: Num | None = UNSET
    baseline_spread_us: Num | None = UNSET
    fixed_us: Num | None = UNSET
    fixed_spread_us: Num | None = UNSET
    measured_speedup: Num | None = UNSET
    speedup: Num | None = UNSET
    speedup_low: Num | None = UNSET
    speedup_high: Num | None = UNSET
    outputs_match: bool | None = UNSET
    max_abs_error: Num | None = UNSET
    tolerance: Num | None = UNSET
    mismatch: str | None = UNSET
    setup_s: Num | None = UNSET
    break_even_calls: int | None = UNSET
    samples: int | None = UNSET
    calls_per_sample: int | None = UNSET
    clock: str | None = UNSET
    harness_us: Num | None = UNSET
    predicted_speedup: Num | None = UNSET
    predicted_low: Num | None = UNSET
    predicted_high: Num | None = UNSET
    prediction_error_pct: Num | None = UNSET
    prediction_missed: bool | None = UNSET
    fixed_verdict: str | None = UNSET
    fixed_verdict_reason: str | None = UNSET
    fixed_run: str | None = UNSET
    settle: str | None = UNSET
    suggested_by: list[str] = UNSET
    same_inputs_us: Num | None = UNSET
    same_inputs_spread_us: Num | None = UNSET
    same_inputs_speedup: Num | None = UNSET
    same_inputs_speedup_low: Num | None = UNSET
    same_inputs_speedup_high: Num | None = UNSET
    same_inputs_status: str | None = UNSET
    same_inputs_prediction_error_pct: Num | None = UNSET

    def is_win(self) -> bool:
        """Measured faster with outputs that match or were not compared
        (``measured_win``: the rule every report applies)."""
        return measured_win(given(self.status), given(self.outputs_match), given(self.speedup))


class WhatIfRecord(Model, kw_only=True):
    """``whatif.json``: what was tried on which function, how the original was timed, and one
    ``WhatIfResult`` per fix."""

    schema_version: int
    function: str = UNSET
    tried: list[str] = UNSET
    baseline_us: Num | None = UNSET
    baseline_spread_us: Num | None = UNSET
    clock: str | None = UNSET
    harness_us: Num | None = UNSET
    measured: str = UNSET
    warmup_call_us_median: Num | None = UNSET
    note: str = UNSET
    results: list[WhatIfResult]


def measured_win(status: object, outputs_match: object, speedup: object) -> bool:
    """Whether a what-if result counts as a fix that works: measured ``faster``, with a
    speedup, and outputs that matched or could not be compared (``outputs_match`` None: the
    original's own outputs change from call to call, as a training step's do). The one rule
    every report's "best measured fix" applies."""
    return (status == "faster" and outputs_match is not False
            and isinstance(speedup, int | float) and not isinstance(speedup, bool))


Answer = Literal["faster", "slower", "cannot tell"]


def classify(low: float, high: float) -> Answer:
    """faster / slower only when the speedup's whole interval is on one side of 1."""
    if low > 1:
        return "faster"
    if high < 1:
        return "slower"
    return "cannot tell"


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def same_inputs_note(r: Mapping[str, Any]) -> str | None:
    """Both timings of a fix timed with and without its inputs copied in, in one line:
    'slower, 0.92x (95% CI 0.90-0.94x), when each call's inputs are copied in; faster, 4.80x
    (95% CI 4.61-5.02x), when the loop passes the same tensors each call (no copy)'. None
    for a record without both speedups and their intervals (an older file, another fix)."""
    keys = ("speedup", "speedup_low", "speedup_high", "same_inputs_speedup",
            "same_inputs_speedup_low", "same_inputs_speedup_high")
    if not all(_number(r.get(k)) for k in keys):
        return None
    copied, low, high, same, same_low, same_high = (float(r[k]) for k in keys)
    return (f"{classify(low, high)}, {copied:.2f}x (95% CI {low:.2f}-{high:.2f}x), when each "
            f"call's inputs are copied in; {classify(same_low, same_high)}, {same:.2f}x "
            f"(95% CI {same_low:.2f}-{same_high:.2f}x), when the loop passes the same tensors "
            "each call (no copy)")


def _unknown(raw: dict[str, Any], kind: type[Model]) -> list[str]:
    return sorted(set(raw) - set(kind.__struct_fields__))


def whatif_record(results: list[dict[str, Any]], **about: Any) -> dict[str, Any]:
    """The file's content: ``schema_version``, what was tried on what (``about``), results;
    a non-finite number (a NaN where the original had none: infinite error) is written null,
    so the file is strict JSON."""
    record: dict[str, Any] = _finite(
        {"schema_version": WHATIF_SCHEMA_VERSION, **about, "results": results})
    unknown = _unknown(record, WhatIfRecord) + [
        k for r in results for k in _unknown(r, WhatIfResult)]
    if unknown:  # a field the type does not name would be lost when the file is read back
        raise ValueError(f"{WHATIF_NAME}: field(s) {sorted(set(unknown))} are not in "
                         "runfolder.whatif.WhatIfRecord / WhatIfResult; add them there")
    return WhatIfRecord.from_dict(record, where=WHATIF_NAME).to_dict()


def _finite(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_whatif(run_dir: Path, record: dict[str, Any]) -> Path:
    """Write ``run_dir/whatif.json`` atomically and add it to the manifest's ``files``,
    holding the folder's lock (a finisher rewriting the manifest at the same time would
    otherwise drop the entry)."""
    path = run_dir / WHATIF_NAME
    with folder_lock(run_dir):
        atomic_write_json(path, record)
        _list_in_manifest(run_dir)
    return path


def _list_in_manifest(run_dir: Path) -> None:
    manifest_path = run_dir / MANIFEST
    try:
        manifest = read_manifest(manifest_path, MAX_MANIFEST_BYTES)  # a FIFO: refused
    except (OSError, ManifestError):
        return  # no readable manifest (a plain trace folder): the file alone is the record
    files = manifest.files or ()
    if WHATIF_NAME in files:
        return
    write_manifest(manifest_path, manifest.replace(files=tuple(sorted({*files, WHATIF_NAME}))))
