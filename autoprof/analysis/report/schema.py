"""The JSON Schema of `autoprof summary --json` (draft 2020-12), shipped beside this module.

``summary.schema.json`` describes both shapes the command prints: one run's summary
(``summarize()``) and one line per run for a folder of runs. ``SCHEMA_VERSION`` is bumped when a
key is removed or renamed or changes type; keys are added without a bump (docs/json.md).
``autoprof schema`` prints the file; ``validate_summary`` checks a dict against it (it needs
the ``jsonschema`` package, which only the tests and tools that validate install).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

SCHEMA_FILE = "summary.schema.json"
SCHEMA_VERSION = 1


@cache
def schema_text() -> str:
    """The schema file's text, as shipped in the package."""
    return resources.files(__package__).joinpath(SCHEMA_FILE).read_text(encoding="utf-8")


def load_schema() -> dict[str, Any]:
    """The schema as a dict (a fresh copy each call)."""
    schema: dict[str, Any] = json.loads(schema_text())
    if schema.get("x-schema-version") != SCHEMA_VERSION:
        raise RuntimeError(f"{SCHEMA_FILE} says x-schema-version "
                           f"{schema.get('x-schema-version')!r}, the code {SCHEMA_VERSION}")
    return schema


def summary_errors(summary: Any) -> list[str]:
    """Every way ``summary`` breaks the schema, one line each (``[]`` when it is valid)."""
    import jsonschema

    schema = load_schema()
    # check against the one shape it claims, so each error names a key, not "not any of"
    shape = "folder_summary" if isinstance(summary, dict) and "runs" in summary else "run_summary"
    del schema["oneOf"]
    schema["$ref"] = f"#/$defs/{shape}"
    validator = jsonschema.Draft202012Validator(schema)
    found = sorted(validator.iter_errors(summary), key=lambda e: list(e.absolute_path))
    return [f"{'/'.join(str(p) for p in e.absolute_path) or '(top)'}: {e.message}"
            for e in found]


def validate_summary(summary: Any) -> None:
    """Raise ``ValueError`` naming each violation when ``summary`` breaks the schema."""
    errors = summary_errors(summary)
    if errors:
        shown = "\n  ".join(errors[:20])
        more = f"\n  ... and {len(errors) - 20} more" if len(errors) > 20 else ""
        raise ValueError(f"summary JSON breaks {SCHEMA_FILE} (schema_version "
                         f"{SCHEMA_VERSION}):\n  {shown}{more}")
