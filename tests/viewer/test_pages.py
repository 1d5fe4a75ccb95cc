"""AppTest (no browser): every page on every kind of traces folder."""

from __future__ import annotations

import re

import pytest
from support.apptest import (
    UNESCAPED_MARKUP,
    assert_wired,
    chart_data,
    charts,
    markdown_sources,
    markdown_texts,
    open_app,
    run_labels,
    select_run,
    visit,
)
from support.viewer import ALL_PAGES, EVIL, EVIL_RUN_NAME, N64, N4096


def test_empty_folder_every_page(roots, monkeypatch):
    at = open_app(roots["empty"], monkeypatch)
    assert at.title[0].value == "Runs"
    assert any("No runs in this folder yet" in t for t in markdown_texts(at))
    for page in ALL_PAGES:
        visit(at, page)
        if page == "compare":
            assert any("Choose two or more runs" in t for t in markdown_texts(at))
        else:
            assert any("No run selected" in t for t in markdown_texts(at)), page


def test_missing_folder_is_explained(tmp_path, monkeypatch):
    at = open_app(tmp_path / "nowhere", monkeypatch)
    assert any("does not exist" in t for t in markdown_texts(at))
    visit(at, "overview")
    assert any("does not exist" in t for t in markdown_texts(at))


def test_runs_list_shows_status_and_verdict(roots, monkeypatch):
    at = open_app(roots["failed"], monkeypatch)
    table = at.dataframe[0].value
    assert len(table) == 3
    assert "failed" in set(table["status"].astype(str))
    labels = run_labels(at)
    assert any(lbl.startswith("✗ boom/") and lbl.endswith(" · failed") for lbl in labels), labels


@pytest.mark.parametrize("run,kind", [(N64, "overhead-bound"), (N4096, "compute-bound")])
def test_h200_every_page(roots, monkeypatch, run, kind):
    at = select_run(open_app(roots["h200"], monkeypatch), run)
    visit(at, "overview")
    assert_wired(at, "overview")
    assert any(kind in t for t in markdown_texts(at)), list(markdown_texts(at))
    labels = {m.label: m.value for m in at.metric}
    assert {"Self CPU total", "Self GPU total", "GPU busy", "Profiled steps"} <= set(labels)
    assert labels["Profiled steps"] == "3"
    assert labels["Self GPU total"].endswith("µs")
    assert any("NVIDIA H200" in t.value for t in at.text)

    visit(at, "ops")
    assert_wired(at, "ops")
    specs = charts(at)
    assert [s["title"].split(":")[0] for s in specs] == ["CPU", "GPU"]
    ops = at.dataframe[0].value
    assert "aten::mm" in set(ops["name"])
    at.text_input(key="ops_filter").input("add").run()
    assert set(at.dataframe[0].value["name"]) <= {n for n in ops["name"] if "add" in n.lower()}

    visit(at, "timeline")
    assert_wired(at, "timeline")
    (spec,) = charts(at)
    assert spec["layer"], spec
    assert at.download_button, "the trace must be downloadable"

    visit(at, "steps")
    assert_wired(at, "steps")
    titles = [s["title"] for s in charts(at)]
    assert any("per step" in t for t in titles) and any("warm-up" in t for t in titles), titles

    visit(at, "compare")
    assert_wired(at, "compare")
    assert len(at.dataframe[0].value) == 2
    assert charts(at)

    visit(at, "ranks")
    assert_wired(at, "ranks")
    assert any("single-process" in t for t in markdown_texts(at))


def test_cpu_run_every_page(roots, monkeypatch):
    at = open_app(roots["cpu"], monkeypatch)
    for page in ALL_PAGES:
        visit(at, page)
        assert_wired(at, page)
    visit(at, "overview")
    assert any("cpu-only" in t for t in markdown_texts(at))
    visit(at, "ops")
    assert [s["title"].split(":")[0] for s in charts(at)] == ["CPU"]
    visit(at, "timeline")
    assert len(charts(at)) == 1


def test_failed_run_shows_error_and_others_work(roots, monkeypatch):
    at = select_run(open_app(roots["failed"], monkeypatch), "boom")
    for page in ("overview", "ops", "timeline", "steps", "ranks"):
        visit(at, page)
        shown = " ".join(str(e.value) for e in at.error) + " ".join(c.value for c in at.code)
        assert "boom" in shown or "CUDA out of memory" in shown, (page, shown)
    select_run(at, N64)
    visit(at, "ops")
    assert len(charts(at)) == 2 and not at.error
    visit(at, "compare")
    assert len(at.dataframe[-1].value) >= 2


def test_multirank_run(roots, monkeypatch):
    at = open_app(roots["multirank"], monkeypatch)
    (label,) = run_labels(at)
    assert label.endswith(" · 2 ranks"), label
    visit(at, "ranks")
    assert_wired(at, "ranks")
    table = at.dataframe[-1].value
    assert sorted(table["rank"].tolist()) == ["0", "1"]
    assert any(t.startswith("Straggler: rank 1") for t in markdown_texts(at))
    titles = [c["title"] if isinstance(c["title"], str) else c["title"]["text"]
              for c in charts(at)]
    assert titles[:2] == ["Share of the mean step per bucket", "Step time per rank"]
    assert len(titles) == 6  # the two heatmaps, then the four per-rank bars
    assert any(t.startswith("2 ranks: median step") for t in markdown_texts(at))
    visit(at, "timeline")
    assert at.selectbox(key="tl_rank").options == ["0", "1"]


def test_many_ranks_draw_heatmaps_and_fold_the_table(roots, monkeypatch):
    """Past BARS_MAX_RANKS ranks the page draws no per-rank bars and folds the rank table
    (a thousand rows) into an expander; the heatmaps carry the picture."""
    import autoprof.viewer.views.ranks as ranks_view

    monkeypatch.setattr(ranks_view, "BARS_MAX_RANKS", 1)
    at = open_app(roots["multirank"], monkeypatch)
    visit(at, "ranks")
    assert_wired(at, "ranks")
    assert len(charts(at)) == 2
    (folded,) = at.expander
    assert folded.label == "All 2 ranks"
    assert sorted(folded.dataframe[0].value["rank"].tolist()) == ["0", "1"]
    for page in ALL_PAGES:
        visit(at, page)


def test_a_run_of_many_ranks_is_shown_rank_by_rank(tmp_path, monkeypatch):
    """Past MAP_MIN_RANKS rank traces the viewer analyses the run rank by rank (a process
    pool, never one table of every rank): Overview and Ranks show the reduce, the other
    pages say where to look; the answer is the whole run's (straggler rank 1)."""
    from support.viewer import add_multirank

    import autoprof.analysis.scale.auto as auto

    monkeypatch.setattr(auto, "MAP_MIN_RANKS", 2)
    add_multirank(tmp_path)  # a folder of its own: the server's run store is process-wide
    at = open_app(tmp_path, monkeypatch)
    texts = list(markdown_texts(at))
    assert any(t.startswith("Straggler: rank 1 ") for t in texts), texts
    assert any(" events, analysed rank by rank: mean step " in t for t in texts), texts
    assert [s.value for s in at.subheader][:2] == [
        "Where the time goes", "Slowest ranks"]
    assert sorted(at.dataframe[1].value["rank"].tolist()) == ["0", "1"]  # the slowest ranks
    visit(at, "ranks")
    assert_wired(at, "ranks")
    assert any(t.startswith("Straggler: rank 1") for t in markdown_texts(at))
    titles = [c["title"] if isinstance(c["title"], str) else c["title"]["text"]
              for c in charts(at)]
    assert titles[:2] == ["Share of the mean step per bucket", "Step time per rank"]
    assert sorted(at.dataframe[-1].value["rank"].tolist()) == ["0", "1"]
    for page, title in (("ops", "Self vs total"), ("source", "Source"), ("timeline", "Timeline"),
                        ("steps", "Steps and warm-up"), ("roofline", "Roofline"),
                        ("memory", "Memory"), ("whatif", "What-if")):
        visit(at, page)
        notes = [t for t in markdown_texts(at) if "analysed rank by rank" in t]
        assert notes and f"for the {title} page" in notes[0], (page, notes)
        assert "rank1" in at.code[-1].value.splitlines()[0]  # the straggler's trace first
    visit(at, "compare")
    assert any("analysed rank by rank (2 ranks), left out" in t for t in markdown_texts(at))
    visit(at, "runs")  # its row says what the reduce found, never "analysis failed"
    [why] = at.dataframe[0].value["why"].tolist()
    assert why.startswith("2 ranks analysed one by one, straggler rank 1: "), why
    assert "each rank's own verdict: " in why, why


def test_malicious_names_render_as_text_everywhere(roots, monkeypatch):
    at = open_app(roots["evil"], monkeypatch)
    seen_in_data = False
    for page in ("runs", *ALL_PAGES):
        visit(at, page)
        for source in markdown_sources(at):
            if any(name in re.sub(r"\\(.)", r"\1", source) for name in (*EVIL, "**bold**")):
                # a user-written name reached Markdown: every markup character must be escaped
                assert not UNESCAPED_MARKUP.search(source.replace("**", "", 2)), (page, source)
        for df in (d.value for d in at.dataframe):
            cells = set(df.astype(str).to_numpy().ravel())
            seen_in_data |= EVIL[0] in cells or EVIL[1] in cells
    assert seen_in_data, "the names must still be shown (as text), not dropped"
    select_run(at, "onerror=alert(3)")
    for page in ("overview", "runs"):
        visit(at, page)
        shown = " ".join(str(e.value) for e in at.error) + " ".join(c.value for c in at.code)
        assert EVIL[0] in shown, (page, shown)  # the error is shown, as text
        for source in markdown_sources(at):
            if "onerror" in source or "script" in source:
                assert not UNESCAPED_MARKUP.search(source.replace("**", "", 2)), (page, source)
    select_run(at, "evil/")
    visit(at, "ops")
    names = {str(v) for df in chart_data(at) if "name" in df.columns for v in df["name"]}
    assert EVIL[0] in names and EVIL[1] in names, names
    labels = run_labels(at)
    assert any(lbl.startswith("✗ <img src=x onerror=alert(3)>/") for lbl in labels), labels
    visit(at, "runs")
    assert EVIL_RUN_NAME in set(at.dataframe[0].value["name"])


def test_big_trace_timeline_draws_whole_steps_and_says_so(tmp_path, monkeypatch):
    from support.synthetic import write_synthetic_trace

    import autoprof
    from autoprof.viewer.views.timeline import MAX_DRAWN

    (tmp_path / "big").mkdir()
    trace = tmp_path / "big" / "big.pt.trace.json"
    write_synthetic_trace(trace, 4 * MAX_DRAWN)
    at = visit(open_app(tmp_path, monkeypatch), "timeline")
    (line,) = [t for t in markdown_texts(at) if t.startswith("Drawing steps")]
    found = re.match(r"Drawing steps (\d+)-(\d+) whole \(([\d,]+) events\)", line)
    assert found, line
    lo, hi, n = int(found[1]), int(found[2]), int(found[3].replace(",", ""))
    per_step = autoprof.load(trace).events["step"].value_counts()
    assert n == sum(per_step.get(s, 0) for s in range(lo, hi + 1)) <= MAX_DRAWN
    assert n + per_step[hi + 1] > MAX_DRAWN  # the next whole step would not fit
    drawn = [df for df in chart_data(at) if "lane" in df.columns]
    assert len(drawn) == 1 and len(drawn[0]) == n
    assert [s["title"] for s in charts(at)] == [f"Timeline of steps {lo}-{hi}"]


def test_size_sweep_on_the_h200_sweep(roots, monkeypatch):
    at = visit(open_app(roots["sweep"], monkeypatch), "compare")
    assert_wired(at, "compare")
    (sweep,) = [s for s in charts(at) if s["title"].startswith("Size sweep of")]
    (data,) = [df for df in chart_data(at) if "size" in df.columns]
    assert sorted(data["size"].unique()) == [64, 128, 256, 512, 1024, 2048, 4096, 8192]
    per_size = data.pivot_table(index="size", columns="measure", values="value")
    cpu, gpu = per_size["CPU per step"], per_size["GPU work per step"]
    assert cpu[64] > 10 * gpu[64]  # overhead-bound: the host dominates
    assert gpu[8192] > cpu[8192]  # compute-bound: the GPU dominates
