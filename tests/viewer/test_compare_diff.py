"""The Compare page leads with the diff of the first two chosen runs (autoprof diff)."""

from __future__ import annotations

from support.apptest import markdown_texts, open_app, visit


def test_compare_leads_with_the_diff_and_says_when_runs_are_not_comparable(roots, monkeypatch):
    # the sweep's runs are one function at eight problem sizes: another problem size is
    # another program, so the diff says not comparable and names the shapes
    at = visit(open_app(roots["sweep"], monkeypatch), "compare")
    assert [h.value for h in at.subheader][:2] == ["Diff", "Side by side"]
    warnings = [w.value for w in at.warning]
    assert any(w.startswith("Not comparable:") and "problem size" in w for w in warnings), (
        warnings, [c.value for c in at.caption])
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


def test_a_verdict_judged_on_the_gpu_time_says_so(tmp_path, monkeypatch):
    """Two H200 recordings of one program, the second with an added `.item()`: the step's
    change is within its noise, the GPU's work per step grew beyond its own (docs/diff.md)."""
    import shutil
    from pathlib import Path

    data = Path(__file__).resolve().parents[1] / "analysis" / "diff" / "data" / "h200"
    copies = []
    for name in ("same_a00", "item_00"):
        run = next((data / name).iterdir())
        copies.append(str(shutil.copytree(run, tmp_path / name / run.name)))
    at = visit(open_app(tmp_path, monkeypatch), "compare")
    at.multiselect(key="compare").set_value(copies[::-1]).run()  # B (the .item()) first
    labels = {m.label: m.value for m in at.metric}
    assert labels.get("GPU time per step (B against A)") == "slower"
    captions = " ".join(c.value for c in at.caption)
    assert "Judged on the GPU time per step" in captions
    assert not at.exception
