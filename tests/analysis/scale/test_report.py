"""The reduce's answer is the run's ``Report``, the type a run read as one table gets.

On the committed two-rank NCCL DDP runs (recorded on H200s), the fields the reduce fills by
the merged summary's own rule (scale/report.py) equal ``autoprof.load(run).summary()``'s: the
run's name, id, status, device, traces and events, the self times (sums of the ranks'), the
straggler and the verdict; the ``rank_by_rank`` section is there only for the reduce, and the
renderers take the one type (text, Markdown, notebook HTML).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import autoprof.analysis as analysis
from autoprof.analysis.report.model import Report
from autoprof.analysis.report.model.base import given
from autoprof.analysis.report.render import FORMATS, render
from autoprof.analysis.report.schema import summary_errors
from autoprof.analysis.scale import summarize_ranks

DATA = Path(__file__).resolve().parents[2] / "data"
RUNS = sorted((DATA / "gpu_h200_x2" / "runs").glob("ddp_*/*/"))
SAME = ["path", "name", "run_id", "status", "world_size", "missing_ranks", "is_cuda", "device",
        "events", "straggler_rank", "verdict", "warmup_call_ms", "wait_call_ms"]


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.parent.name)
def test_the_reduce_fills_the_common_fields_as_the_merged_summary(run: Path) -> None:
    merged = analysis.load(run).summary()
    report = summarize_ranks(run, use_cache=False).report()
    assert isinstance(report, Report) and "rank_by_rank" not in merged
    ours = report.to_dict()
    assert {k: ours[k] for k in SAME} == {k: merged[k] for k in SAME}
    assert sorted(ours["trace_paths"]) == sorted(merged["trace_paths"])
    for key in ("self_cpu_us", "self_gpu_us", "cpu_gpu_ratio"):
        assert math.isclose(ours[key], merged[key], rel_tol=1e-9), key
    section = given(report.rank_by_rank)
    assert section is not None and section.ranks_analysed == len(report.ranks) == 2
    assert [given(r.trace) for r in report.ranks] == ours["trace_paths"]
    assert summary_errors(ours) == []


def test_every_renderer_takes_the_reduce_s_report() -> None:
    straggler = next(r for r in RUNS if r.parent.name == "ddp_straggler")
    report = summarize_ranks(straggler, use_cache=False).report()
    texts = {fmt: render(report, fmt) for fmt in FORMATS}
    assert "STRAGGLER: rank 1" in texts["text"] and "RANKS' SPREAD" in texts["text"]
    assert "DIAGNOSTICS" not in texts["text"]  # no events read: no empty sections of them
    assert "**Ranks analysed one by one**: 2 of 2; straggler: rank 1" in texts["markdown"]
    for fmt, text in texts.items():
        assert report.verdict in text, fmt
