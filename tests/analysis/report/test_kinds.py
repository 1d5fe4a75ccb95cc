"""Bucket names, verdict kinds, fix names and their colours have one home: analysis/kinds.py.
Every user reads them from there, so the viewer and the notebook paint a bucket alike."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

from autoprof.analysis import kinds

PACKAGE = Path(kinds.__file__).resolve().parents[1]
NAMES = (*kinds.BUCKETS, *kinds.VERDICT_KINDS, *kinds.SEVERITIES)


def _sources() -> dict[str, str]:
    return {str(p.relative_to(PACKAGE)): p.read_text(encoding="utf-8")
            for p in PACKAGE.rglob("*.py") if p.name != "kinds.py"}


def test_the_literal_types_and_their_tuples_name_the_same_kinds() -> None:
    assert set(get_args(kinds.Bucket)) == set(kinds.BUCKETS)
    assert set(get_args(kinds.VerdictKind)) == set(kinds.VERDICT_KINDS)
    assert set(get_args(kinds.Severity)) == set(kinds.SEVERITIES)
    assert set(get_args(kinds.FixName)) == set(kinds.FIX_NAMES)
    assert set(get_args(kinds.MeasuredFixName)) == set(kinds.MEASURED_FIX_NAMES)
    assert set(get_args(kinds.CatalogueFixName)) == set(kinds.CATALOGUE_FIX_NAMES)
    assert sorted(kinds.BUCKETS_SHOWN) == sorted(kinds.BUCKETS)
    assert set(kinds.GPU_BUCKETS) | set(kinds.HOST_BUCKETS) == set(kinds.BUCKETS)


def test_every_kind_has_one_colour_and_the_text_bar_one_mark_each() -> None:
    assert set(kinds.BUCKET_COLOURS) == set(kinds.BUCKETS)
    assert set(kinds.VERDICT_COLOURS) == set(kinds.VERDICT_KINDS) == set(kinds.VERDICT_TONE)
    assert set(kinds.SEVERITY_COLOURS) == set(kinds.SEVERITIES)
    assert list(kinds.BUCKET_MARKS) == list(kinds.BUCKETS)
    assert len(set(kinds.BUCKET_MARKS.values())) == len(kinds.BUCKETS)
    assert len(set(kinds.BUCKET_COLOURS.values())) == len(kinds.BUCKETS)


def test_the_analysis_and_the_measuring_side_use_the_same_objects() -> None:
    from autoprof.analysis.metrics import breakdown, verdict
    from autoprof.analysis.metrics.replay import fixes
    from autoprof.record.whatif import FIXES

    assert breakdown.BUCKETS is kinds.BUCKETS
    assert verdict.Verdict.__annotations__["kind"] == "VerdictKind"
    assert verdict.VerdictKind is kinds.VerdictKind  # type: ignore[attr-defined]
    assert fixes.FixName is kinds.FixName
    assert tuple(FIXES) == kinds.MEASURED_FIX_NAMES  # the order they are tried in


def test_no_other_module_spells_a_colour_for_a_kind() -> None:
    names = "|".join(re.escape(n) for n in NAMES)
    colour_of_kind = re.compile(rf'"({names})"\s*:\s*"#[0-9a-fA-F]{{6}}"')
    found = {path: colour_of_kind.findall(text) for path, text in _sources().items()}
    assert {p: f for p, f in found.items() if f} == {}


def test_no_other_module_lists_the_buckets_or_the_verdicts_again() -> None:
    def spelled(group: tuple[str, ...]) -> re.Pattern[str]:
        # every name of one group in a row, in a tuple or list: a copy of the list
        one = "|".join(re.escape(n) for n in group)
        return re.compile(rf'"(?:{one})"(?:,\s*"(?:{one})"){{{len(group) - 1}}}')

    for group in (kinds.BUCKETS, kinds.VERDICT_KINDS, kinds.MEASURED_FIX_NAMES):
        pattern = spelled(group)
        copies = [p for p, text in _sources().items() if pattern.search(text)]
        assert copies == [], (group, copies)


def test_the_viewer_and_the_notebook_paint_a_bucket_alike() -> None:
    from support.reports import report

    from autoprof.analysis.report.notebook import breakdown_bar

    html = breakdown_bar(report(breakdown={
        "step_us": 100.0, "steps": 3, "buckets_pct": {"gpu_compute": 70.0, "host_launch": 30.0}}))
    assert f"background:{kinds.BUCKET_COLOURS['gpu_compute']}" in html
    assert f"background:{kinds.BUCKET_COLOURS['host_launch']}" in html
    viewer = (PACKAGE / "viewer" / "views" / "breakdown.py").read_text(encoding="utf-8")
    assert "BUCKET_COLOURS[b]" in viewer
