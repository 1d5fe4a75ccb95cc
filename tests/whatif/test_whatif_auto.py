"""try_fixes="auto": the fixes a run's opportunities, verdict and diagnostics point at."""

from __future__ import annotations

import pytest

from autoprof.record.whatif.auto import ALWAYS, resolve, suggested_by


def test_opportunity_causes_come_first_then_the_verdict():
    summary = {"opportunities": [{"cause": "host_sync"}, {"cause": "host_launch"}],
               "verdict": "compute-bound", "diagnostics": []}
    assert resolve("auto", summary) == ["cuda-graph", "compile-reduce-overhead", "compile",
                                        "bf16", *ALWAYS]


def test_without_opportunities_the_verdict_and_diagnostics_decide():
    overhead = {"verdict": "overhead-bound", "diagnostics": [{"id": "host-sync"}]}
    assert resolve("auto", overhead)[:3] == ["cuda-graph", "compile-reduce-overhead", "compile"]
    assert resolve("auto", {"verdict": "compute-bound"})[:2] == ["bf16", "compile"]
    assert resolve("auto", {"verdict": "cpu-only"}) == ["compile", *ALWAYS]
    assert resolve("auto", {}) == list(ALWAYS)


def test_names_all_and_unknown():
    assert resolve("bf16", {}) == ["bf16"]
    assert resolve(["bf16", "compile", "bf16"], {}) == ["bf16", "compile"]
    assert len(resolve("all", {})) == 6
    with pytest.raises(ValueError, match=r"unknown fix\(es\) \['fast'\]"):
        resolve(("fast",), {})


def test_suggested_by_names_the_findings_behind_a_fix():
    summary = {"verdict": "overhead-bound", "diagnostics": [{"id": "host-sync"},
                                                            {"id": "cold-start"}]}
    assert suggested_by("cuda-graph", summary) == ["overhead-bound", "host-sync"]
    assert suggested_by("bf16", summary) == []
