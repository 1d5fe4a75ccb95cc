"""try_fixes="auto": the fixes a run's opportunities, verdict and diagnostics point at."""

from __future__ import annotations

import pytest
from support.reports import report

from autoprof.record.whatif.auto import ALWAYS, resolve, suggested_by


def test_opportunity_causes_come_first_then_the_verdict():
    summary = report(opportunities=[{"cause": "host_sync"}, {"cause": "host_launch"}],
                     verdict="compute-bound", diagnostics=[], is_cuda=True)
    assert resolve("auto", summary) == ["cuda-graph", "compile-reduce-overhead", "compile",
                                        "bf16", *ALWAYS]


def test_without_opportunities_the_verdict_and_diagnostics_decide():
    overhead = report(verdict="overhead-bound", diagnostics=[{"id": "host-sync"}], is_cuda=True)
    assert resolve("auto", overhead)[:3] == ["cuda-graph", "compile-reduce-overhead", "compile"]
    assert resolve("auto", report(verdict="compute-bound"))[:2] == ["bf16", "compile"]
    assert resolve("auto", report(verdict="cpu-only")) == ["compile", *ALWAYS]
    assert resolve("auto", None) == list(ALWAYS)


def test_names_all_and_unknown():
    assert resolve("bf16") == ["bf16"]
    assert resolve(["bf16", "compile", "bf16"]) == ["bf16", "compile"]
    assert len(resolve("all")) == 6
    with pytest.raises(ValueError, match=r"unknown fix\(es\) \['fast'\]"):
        resolve(("fast",))


def test_suggested_by_names_the_findings_behind_a_fix():
    summary = report(verdict="overhead-bound", is_cuda=True,
                     diagnostics=[{"id": "host-sync"}, {"id": "cold-start"}])
    assert suggested_by("cuda-graph", summary) == ["overhead-bound", "host-sync"]
    assert suggested_by("bf16", summary) == []


def test_cuda_only_fixes_are_never_suggested_on_a_cpu_run():
    summary = report(opportunities=[{"cause": "host_launch"}, {"cause": "host_sync"}],
                     verdict="overhead-bound", diagnostics=[{"id": "host-sync"}],
                     is_cuda=False)
    names = resolve("auto", summary)
    assert names == ["compile", *ALWAYS]
    assert suggested_by("cuda-graph", summary) == []
    assert suggested_by("compile-reduce-overhead", summary) == []
    assert suggested_by("compile", summary) == ["host_launch", "overhead-bound"]
    # named explicitly, a CUDA-only fix is still tried (and says why it cannot run)
    assert resolve(("cuda-graph",), summary) == ["cuda-graph"]


@pytest.mark.parametrize("bad", [123, 1.5, True, None, {"compile": 1}, ["compile", 3],
                                 iter(["compile"])])
def test_try_fixes_that_is_not_a_name_or_list_of_names_is_refused_clearly(bad):
    with pytest.raises(ValueError, match=r"try_fixes must be 'auto', 'all', a fix name or a "
                                         r"list/tuple of fix names \(compile, ") as err:
        resolve(bad)
    assert type(bad).__name__ in str(err.value)
    assert "not iterable" not in str(err.value)


def test_predictions_are_read_from_the_opportunities_that_name_the_fix():
    from autoprof.record.whatif.auto import predicted_for

    summary = report(opportunities=[
        {"cause": "host_launch", "fix": "cuda-graph", "predicted_speedup": 4.0},
        {"cause": "gpu_memory", "fix": "bf16", "predicted_speedup": 1.3},
        {"cause": "host_sync", "fix": "cuda-graph", "predicted_speedup": 9.0}])
    assert predicted_for("cuda-graph", summary) == 4.0  # the first that names it
    assert predicted_for("bf16", summary) == 1.3
    assert predicted_for("inference-mode", summary) is None
    assert predicted_for("inference-mode", None) is None
    unpredicted = report(opportunities=[{"fix": "compile", "predicted_speedup": None}])
    assert predicted_for("compile", unpredicted) is None


def test_the_interval_is_read_from_the_same_opportunity_as_the_prediction():
    from autoprof.record.whatif.auto import interval_for

    summary = report(opportunities=[
        {"fix": "cuda-graph", "predicted_speedup": 4.0,
         "predicted_interval": {"low": 2.5, "high": 6.0}},
        {"fix": "cuda-graph", "predicted_speedup": 9.0,
         "predicted_interval": {"low": 1.0, "high": 20.0}},
        {"fix": "bf16", "predicted_speedup": 1.3},
        {"fix": "compile", "predicted_speedup": 1.1, "predicted_interval": {"low": "x"}}])
    assert interval_for("cuda-graph", summary) == (2.5, 6.0)
    assert interval_for("bf16", summary) is None  # stated none
    assert interval_for("compile", summary) is None  # not numbers
    assert interval_for("inference-mode", summary) is None
    assert interval_for("cuda-graph", None) is None


def test_check_refuses_a_bad_try_fixes_before_calling_the_function():
    import autoprof

    calls = []
    with pytest.raises(ValueError, match="try_fixes must be 'auto', 'all', a fix name") as err:
        autoprof.check(calls.append, 1, try_fixes=123)
    assert "got 123 (int)" in str(err.value)
    assert calls == []


def test_a_cpu_run_whose_heaviest_op_is_a_product_tries_bf16_first():
    summary = report(is_cuda=False, verdict="cpu-only", diagnostics=[], opportunities=[
        {"cause": "cpu_op", "where": [{"name": "aten::mm", "us_per_step": 900.0}]}])
    assert resolve("auto", summary) == ["bf16", "compile", *ALWAYS]
    assert suggested_by("bf16", summary) == ["cpu_matrix_op"]


def test_a_cpu_run_whose_heaviest_op_is_not_arithmetic_tries_compile_only():
    summary = report(is_cuda=False, verdict="cpu-only", diagnostics=[], opportunities=[
        {"cause": "cpu_op", "where": [{"name": "aten::index_select", "us_per_step": 900.0}]}])
    assert resolve("auto", summary) == ["compile", *ALWAYS]
