"""The Compare page leads with the diff of the first two chosen runs (autoprof diff)."""

from __future__ import annotations

from support.apptest import markdown_texts, open_app, visit


def test_compare_leads_with_the_diff_and_says_when_runs_are_not_comparable(roots, monkeypatch):
    # the sweep's runs are one function at eight problem sizes: another problem size is
    # another program, so the diff says not comparable and names the shapes
    at = visit(open_app(roots["sweep"], monkeypatch), "compare")
    assert [h.value for h in at.subheader][:2] == ["Diff", "Side by side"]
    warnings = [w.value for w in at.warning]
    assert any(w.startswith("Not comparable:") and "problem size" in w for w in warnings)
    assert not at.exception


def test_a_comparable_pair_gets_a_verdict_and_its_interval(roots, monkeypatch):
    at = open_app(roots["h200"], monkeypatch)
    visit(at, "compare")
    shown = " ".join(markdown_texts(at)) + " ".join(w.value for w in at.warning)
    labels = {m.label: m.value for m in at.metric}
    # the h200 folder holds the seed at 64 and at 4096: not comparable, or (a second run of
    # one size) a verdict with its 95% interval
    assert "Not comparable" in shown or {"Step time (B against A)",
                                         "95% interval of the change"} <= set(labels)
    assert not at.exception
