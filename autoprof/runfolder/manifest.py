"""The run-folder record: one typed ``Manifest`` that every writer and reader goes through.

``Manifest.from_json(data, path)`` reads a manifest tolerantly and ``to_json()`` writes it;
the keys are those of docs/architecture.md ("Run folder") plus the finisher's bookkeeping
(``run_id``, ``requested_status``, ``tables_error``, ``ended_by``, ``missing_ranks``,
``missing_reason``, and
``retry`` when a finish kept a plain trace after a failed write).

Reading, one rule per field:

- core keys, a ``ManifestError`` (naming the file and the field) when unusable:
  ``schema_version`` (a positive integer, at most ``SCHEMA_VERSION``: a newer one may mean
  something else), ``name`` (a string), ``status`` (one of ``STATUSES``; ``complete`` when
  absent: manifests older than the status key were only written for finished runs),
  ``files`` (a list of names, or absent: an old run, whose traces are found by name);
- ``*_call_ms`` (warmup, wait, after_window): the finite, non-bool numbers of the list, in order;
  anything else in it (a bool, a string, NaN, infinity) is dropped, and a value that is not a
  list reads as ``[]``;
- every other key: its value when it has the documented type, else its default (a string
  where a number belongs reads as absent, never as an error: old and hand-edited runs open);
- keys this version does not know are kept in ``extra`` and written back unchanged.

No torch, no pandas, no autoprof.analysis: the analysis loader turns ``ManifestError`` into
its ``TraceError`` with the same message.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from autoprof.runfolder.confine import ReadRefused, read_regular
from autoprof.runfolder.files import (
    FINAL_STATUSES,
    MANIFEST,
    SCHEMA_VERSION,
    STATUSES,
    Status,
    atomic_write_bytes,
    versions,
)
from autoprof.runfolder.readings import Readings

REQUIRED_KEYS = ("schema_version", "name")
RANK_MANIFEST_GLOB = "rank*.manifest.json"
_RANK_MANIFEST = re.compile(r"^rank(\d{1,6})\.manifest\.json$")


def rank_manifest(rank: int) -> str:
    """Each rank's own manifest under torch.distributed (rank 0 also writes ``MANIFEST``)."""
    return f"rank{rank}.manifest.json"


def rank_of_manifest(name: str) -> int | None:
    """``rank3.manifest.json`` -> 3; None for any other name."""
    match = _RANK_MANIFEST.match(name)
    return int(match.group(1)) if match else None


def manifest_name(rank: int | None) -> str:
    """The file a process's record goes to: its rank's under torch.distributed, else
    ``MANIFEST``."""
    return MANIFEST if rank is None else rank_manifest(rank)
class ManifestError(ValueError):
    """A manifest that cannot be read: ``str()`` is one line, ``<file>: <problem>``."""

    def __init__(self, path: str | Path, problem: str, field: str | None = None) -> None:
        self.path = str(path)
        self.problem = problem
        self.field = field
        super().__init__(f"{self.path}: {problem}")

    def __reduce__(self) -> tuple[type[ManifestError], tuple[str, str, str | None]]:
        return (ManifestError, (self.path, self.problem, self.field))


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _rank(value: object) -> int | None:
    number = _int(value)
    return number if number is not None and number >= 0 else None


def _world(value: object) -> int:
    number = _int(value)
    return number if number is not None and number >= 1 else 1


def dict_or_none(value: object) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def _dict_or_empty(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def status_or_none(value: object) -> Status | None:
    for status in STATUSES:
        if value == status:
            return status
    return None


def positive_number(value: object) -> float | None:
    """A finite, positive, non-bool JSON number as a float; None for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer too large for a float
        return None
    return number if math.isfinite(number) and number > 0 else None


def finite_numbers(value: object) -> tuple[float, ...]:
    """The finite, non-bool numbers of a JSON list, in order (ints stay ints, so a value
    reads back as it was written); a value that is not a list gives ``()``."""
    if not isinstance(value, list | tuple):
        return ()
    return tuple(v for v in value if isinstance(v, int | float) and not isinstance(v, bool)
                 and math.isfinite(v))


def _ranks(value: object) -> tuple[int, ...] | None:
    if not isinstance(value, list | tuple):
        return None
    return tuple(v for v in value if _rank(v) is not None)


# The tolerant fields: key -> the rule that reads its JSON value (a wrong type: its default).
_RULES: dict[str, Callable[[object], Any]] = {
    "qualname": _str, "source_file": _str, "source_line": _int, "run_id": _str,
    "host": _str, "pid": _int, "rank": _rank, "world_size": _world, "device": dict_or_none,
    "options": _dict_or_empty, "versions": _dict_or_empty, "started_at": _str,
    "ended_at": _str, "warmup_call_ms": finite_numbers, "wait_call_ms": finite_numbers,
    "warmup_between_ms": finite_numbers, "idle_sync_ms": finite_numbers,
    "after_window_call_ms": finite_numbers, "after_window_iter_ms": positive_number,
    "steps_recorded": _int, "error": dict_or_none,
    "tables_error": _str, "requested_status": status_or_none, "ended_by": _str, "ranks": _ranks,
    "missing_ranks": _ranks, "missing_reason": _str, "retry": dict_or_none,
}
# Written only when set (``ranks``: torch.distributed; ``requested_status``: handed over).
_OMIT_WHEN_NONE = frozenset({"ranks", "requested_status", "ended_by", "missing_ranks",
                             "missing_reason", "retry", "after_window_iter_ms"})


@dataclasses.dataclass(frozen=True)
class Manifest(Readings):
    """One run's (or one rank's) ``manifest.json``: what was recorded, how, and its status;
    what its options and extra keys say are the properties of ``Readings``."""

    name: str
    schema_version: int = SCHEMA_VERSION
    status: Status = "complete"
    qualname: str | None = None
    source_file: str | None = None
    source_line: int | None = None
    run_id: str | None = None
    host: str | None = None
    pid: int | None = None
    rank: int | None = None
    world_size: int = 1
    device: dict[str, Any] | None = None
    options: dict[str, Any] = dataclasses.field(default_factory=dict)
    versions: dict[str, Any] = dataclasses.field(default_factory=dict)
    started_at: str | None = None
    ended_at: str | None = None
    warmup_call_ms: tuple[float, ...] = ()
    # between two warm-up calls (the caller's loop, untraced) and the closing sync's own cost
    warmup_between_ms: tuple[float, ...] = ()
    idle_sync_ms: tuple[float, ...] = ()
    wait_call_ms: tuple[float, ...] = ()
    after_window_call_ms: tuple[float, ...] = ()  # the first calls after the window
    # then calls timed back to back, one device sync after them: the untraced iteration
    after_window_iter_ms: float | None = None
    steps_recorded: int | None = None
    files: tuple[str, ...] | None = None
    error: dict[str, Any] | None = None
    tables_error: str | None = None
    requested_status: Status | None = None
    ended_by: str | None = None
    ranks: tuple[int, ...] | None = None
    missing_ranks: tuple[int, ...] | None = None
    missing_reason: str | None = None  # why each missing rank is missing, one clause each
    # A finish that kept plain traces after an error: what the next finish decides from
    # (``requested_status``, ``error`` as handed over) and the ``raw`` names kept.
    retry: dict[str, Any] | None = None
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    # -- reading -----------------------------------------------------------------------

    @classmethod
    def from_json(cls, data: bytes | str | Mapping[str, Any], path: str | Path) -> Manifest:
        """The record in ``data`` (the file's bytes, or the object they decode to); raises
        ManifestError naming ``path`` and the field when a core key is unusable."""
        raw = _decode(data, path) if isinstance(data, bytes | str) else data
        if not isinstance(raw, Mapping):
            raise ManifestError(path, f"manifest is a JSON {type(raw).__name__}, not an object")
        missing = [k for k in REQUIRED_KEYS if k not in raw]
        if missing:
            raise ManifestError(path, f"manifest lacks required keys {missing} (keys found: "
                                      f"{sorted(raw)[:10]})", missing[0])
        known = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        if not isinstance(raw["name"], str):
            raise ManifestError(path, f"manifest name {raw['name']!r} is not a string", "name")
        return cls(
            name=raw["name"],
            schema_version=_schema_version(raw["schema_version"], path),
            status=_read_status(raw.get("status", "complete"), path),
            files=_read_files(raw.get("files"), path),
            **{key: rule(raw.get(key)) for key, rule in _RULES.items() if key in raw},
            extra={k: v for k, v in raw.items() if k not in known},
        )

    @classmethod
    def from_view(cls, view: object) -> Manifest | None:
        """The record a plain dict stands for (``to_dict()``'s, or one built by hand), read
        by the same rules, an unusable core key defaulted instead of refused; None when
        ``view`` is not a mapping (a run without a manifest)."""
        if not isinstance(view, Mapping):
            return None
        try:
            return cls.from_json({"schema_version": SCHEMA_VERSION, "name": "", **view}, "")
        except ManifestError as exc:  # that key's default, the others as they are
            if exc.field not in view:
                raise
            return cls.from_view({k: v for k, v in view.items() if k != exc.field})

    # -- writing -----------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values in the documented key order, then the unknown keys."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "extra" or (f.name in _OMIT_WHEN_NONE and value is None):
                continue
            out[f.name] = list(value) if isinstance(value, tuple) else value
        out.update(self.extra)
        return out

    def to_json(self) -> bytes:  # the file's bytes: indented JSON, a trailing newline
        return (json.dumps(self.to_dict(), indent=2, default=str) + "\n").encode()

    def replace(self, **changes: Any) -> Manifest:
        return dataclasses.replace(self, **changes)

    # -- what the record says ----------------------------------------------------------

    @property
    def is_final(self) -> bool:
        return self.status in FINAL_STATUSES

    @property
    def trace_prefix(self) -> str:
        """Names of this manifest's own traces start with this: ``rank<R>.`` under
        torch.distributed, else ``""`` (every trace in the folder)."""
        return f"rank{self.rank}." if self.world_size > 1 and self.rank is not None else ""


def _decode(data: bytes | str, path: str | Path) -> object:
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise ManifestError(path, f"manifest is not valid JSON ({exc})") from None


def _schema_version(version: object, path: str | Path) -> int:
    number = _int(version)
    if number is None or number < 1:
        raise ManifestError(path, f"manifest schema_version {version!r} is not a positive "
                                  "integer", "schema_version")
    if number > SCHEMA_VERSION:
        raise ManifestError(
            path, f"manifest schema_version {number} is newer than this autoprof reads "
                  f"({SCHEMA_VERSION}); upgrade autoprof to open this run", "schema_version")
    return number


def _read_status(value: object, path: str | Path) -> Status:
    status = status_or_none(value)
    if status is None:
        raise ManifestError(path, f"manifest status {value!r} is not one of {STATUSES}",
                            "status")
    return status


def _read_files(value: object, path: str | Path) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not (isinstance(value, list) and all(isinstance(f, str) for f in value)):
        raise ManifestError(path, "manifest 'files' is not a list of file names", "files")
    return tuple(value)


def read_manifest(path: Path, max_bytes: int) -> Manifest:
    """The record in the file at ``path`` (at most ``max_bytes``), or ManifestError."""
    try:  # inside its run folder, a regular file, small (confine.py)
        data = read_regular(path, max_bytes, folder=path.parent)
    except ReadRefused as refused:
        raise ManifestError(path, refused.problem) from None
    except OSError as exc:
        raise ManifestError(path, f"cannot read the manifest ({exc.strerror or exc})") from None
    return Manifest.from_json(data, path)


# -- the writers' side --------------------------------------------------------------------

def build_manifest(
    *,
    status: Status,
    identity: Mapping[str, Any],
    options: dict[str, Any],
    started_at: str,
    ended_at: str | None,
    warmup_call_ms: Iterable[float],
    wait_call_ms: Iterable[float] = (),
    warmup_between_ms: Iterable[float] = (),
    idle_sync_ms: Iterable[float] = (),
    steps_recorded: int,
    files: Iterable[str] = (),
    error: dict[str, str] | None = None,
) -> Manifest:
    """The recording process's record. ``identity`` holds name, qualname, source_file,
    source_line, host, pid, rank, world_size, device, run_id. ``warmup_call_ms``: the
    untraced warm-up calls; ``wait_call_ms``: the profiler steps before the first recorded
    one (``skip_first`` and the first cycle's ``wait``), both timed the same way (wall clock,
    device synchronized when CUDA is in use), kept to the nanosecond; ``warmup_between_ms``:
    from the end of one warm-up call to the start of the next on one thread (the caller's
    loop); ``idle_sync_ms``: the closing sync's own cost with nothing to wait for."""
    return Manifest(
        status=status,
        **identity,
        options=options,
        versions=versions(),
        started_at=started_at,
        ended_at=ended_at,
        warmup_call_ms=tuple(round(float(v), 6) for v in warmup_call_ms),
        wait_call_ms=tuple(round(float(v), 6) for v in wait_call_ms),
        warmup_between_ms=tuple(round(float(v), 6) for v in warmup_between_ms),
        idle_sync_ms=tuple(round(float(v), 6) for v in idle_sync_ms),
        steps_recorded=int(steps_recorded),
        files=tuple(sorted(set(files))),
        error=error,
    )


def write_manifest(path: Path, manifest: Manifest) -> None:
    """Write the record atomically (a reader sees the old file or the new one)."""
    atomic_write_bytes(path, manifest.to_json())
