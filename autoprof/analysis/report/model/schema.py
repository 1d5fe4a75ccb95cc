"""The summary's JSON Schema (draft 2020-12), generated from the report's types.

``summary_schema()`` is what ``autoprof schema`` prints and what ships as
``analysis/report/summary.schema.json`` (a test holds the shipped file to it). Regenerate the
file after changing a type::

    python -m autoprof.analysis.report.model.schema > autoprof/analysis/report/summary.schema.json
"""

from __future__ import annotations

import json
import sys
from typing import Any

import msgspec

from autoprof.analysis.report.model.report import FolderSummary, Report

SUMMARY_SCHEMA_VERSION = 2
DRAFT = "https://json-schema.org/draft/2020-12/schema"
ABOUT = ("What `autoprof summary --json` prints: one run's report (a run analysed rank by "
         "rank adds its rank_by_rank section), or one line per run for a folder of runs. "
         "Times in microseconds unless a key names another unit (_ms, _s, _pct, _bytes). "
         f"schema_version {SUMMARY_SCHEMA_VERSION}: keys may be added in any release; a key "
         "removed, renamed or given another type bumps it (docs/json.md). Generated from "
         "autoprof.analysis.report.model.")


def summary_schema() -> dict[str, Any]:
    """The schema: the root is one of ``$defs/Report`` and ``$defs/FolderSummary``."""
    refs, defs = msgspec.json.schema_components([Report, FolderSummary],
                                                ref_template="#/$defs/{name}")
    return {"$schema": DRAFT, "$id": f"urn:autoprof:summary:{SUMMARY_SCHEMA_VERSION}",
            "title": "autoprof summary --json", "description": ABOUT,
            "x-schema-version": SUMMARY_SCHEMA_VERSION, "oneOf": list(refs),
            "$defs": _tidy(dict(sorted(defs.items())))}


def _tidy(node: Any) -> Any:
    """``anyOf`` of plain types written as one ``type`` list: a ``Num | None`` field reads
    ``{"type": ["number", "null"]}`` (an integer is a number) instead of three branches."""
    if isinstance(node, list):
        return [_tidy(n) for n in node]
    if not isinstance(node, dict):
        return node
    node = {k: _tidy(v) for k, v in node.items()}
    branches = node.get("anyOf")
    if isinstance(branches, list) and all(set(b) == {"type"} for b in branches):
        types = [b["type"] for b in branches]
        if "number" in types and "integer" in types:
            types.remove("integer")
        del node["anyOf"]
        node["type"] = types[0] if len(types) == 1 else types
    return node


def summary_schema_text() -> str:
    """The schema as the shipped file holds it: indented, keys in a fixed order."""
    return json.dumps(summary_schema(), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    sys.stdout.write(summary_schema_text())
