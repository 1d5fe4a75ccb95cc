"""The JSON Schemas of `autoprof summary --json` and `autoprof diff --json` (draft 2020-12),
shipped beside this module.

``summary.schema.json`` describes the two shapes the command prints: one run's report
(``model.Report``; a run analysed rank by rank is one too, with its ``rank_by_rank``
section) and one line per run for a folder of runs (``model.FolderSummary``). It is
generated from those types (``model/schema.py``), never edited by hand. ``SCHEMA_VERSION`` is
bumped when a key is removed or renamed or changes type; keys are added without a bump
(docs/json.md). ``autoprof schema`` prints the file; ``validate_summary`` checks a dict against
it (it needs the ``jsonschema`` package, which only the tests and tools that validate install).

``diff.schema.json`` describes `autoprof diff --json` (``Diff.to_json()``), versioned the same
way by ``DIFF_SCHEMA_VERSION`` (docs/diff.md); ``autoprof schema --diff`` prints it and
``validate_diff`` checks a dict against it.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from autoprof.analysis.report.model.schema import SUMMARY_SCHEMA_VERSION

SCHEMA_FILE = "summary.schema.json"
SCHEMA_VERSION = SUMMARY_SCHEMA_VERSION
DIFF_SCHEMA_FILE = "diff.schema.json"
DIFF_SCHEMA_VERSION = 1


@cache
def schema_text(file: str = SCHEMA_FILE) -> str:
    """A schema file's text (the summary's unless ``file`` names the diff's), as shipped."""
    return resources.files(__package__).joinpath(file).read_text(encoding="utf-8")


def _load(file: str, version: int) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(schema_text(file))
    if schema.get("x-schema-version") != version:
        raise RuntimeError(f"{file} says x-schema-version "
                           f"{schema.get('x-schema-version')!r}, the code {version}")
    return schema


def load_schema() -> dict[str, Any]:
    """The summary's schema as a dict (a fresh copy each call)."""
    return _load(SCHEMA_FILE, SCHEMA_VERSION)


def load_diff_schema() -> dict[str, Any]:
    """The diff's schema as a dict (a fresh copy each call)."""
    return _load(DIFF_SCHEMA_FILE, DIFF_SCHEMA_VERSION)


def _errors(schema: dict[str, Any], data: Any) -> list[str]:
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema)
    found = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    return [f"{'/'.join(str(p) for p in e.absolute_path) or '(top)'}: {e.message}"
            for e in found]


def _raise(file: str, version: int, errors: list[str]) -> None:
    if errors:
        shown = "\n  ".join(errors[:20])
        more = f"\n  ... and {len(errors) - 20} more" if len(errors) > 20 else ""
        raise ValueError(f"{file.split('.')[0]} JSON breaks {file} "
                         f"(schema_version {version}):\n  {shown}{more}")


def summary_errors(summary: Any) -> list[str]:
    """Every way ``summary`` breaks the schema, one line each (``[]`` when it is valid)."""
    schema = load_schema()
    # check against the one shape it claims, so each error names a key, not "not any of"
    shape = "Report"
    if isinstance(summary, dict):
        shape = "FolderSummary" if "runs" in summary else "Report"
    del schema["oneOf"]
    schema["$ref"] = f"#/$defs/{shape}"
    return _errors(schema, summary)


def validate_summary(summary: Any) -> None:
    """Raise ``ValueError`` naming each violation when ``summary`` breaks the schema."""
    _raise(SCHEMA_FILE, SCHEMA_VERSION, summary_errors(summary))


def diff_errors(result: Any) -> list[str]:
    """Every way a diff's JSON breaks ``diff.schema.json``, one line each (``[]``: valid)."""
    return _errors(load_diff_schema(), result)


def validate_diff(result: Any) -> None:
    """Raise ``ValueError`` naming each violation when a diff's JSON breaks its schema."""
    _raise(DIFF_SCHEMA_FILE, DIFF_SCHEMA_VERSION, diff_errors(result))
