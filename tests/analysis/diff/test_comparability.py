"""Comparability: what the decorated function was called with decides it; a guessed problem
size and other thread counts are listed as caveats, never silently."""

from __future__ import annotations

from dataclasses import replace

from autoprof.analysis.diff import diff_facts, exit_status, render_text
from tests.analysis.diff.test_diff import _facts, checked

CALL = ("float32[256, 64]", "int")


def test_a_guessed_problem_size_is_a_caveat_not_a_refusal() -> None:
    """The loader case: the first op's largest dimension (an op in the caller's loader) says
    64 in A and 20000 in B; the step got the same batches, and it got faster."""
    a = _facts([1000.0, 1003.0, 997.0, 1001.0, 999.0], problem_size=64.0,
               problem_size_guessed=True, call_inputs=CALL)
    b = replace(a, step_us=[s / 3 for s in a.step_us], problem_size=20000.0)
    d = checked(diff_facts(a, b))
    assert d.comparability.status == "comparable with caveats"
    assert any(c.startswith("problem size (guessed") for c in d.comparability.caveats)
    assert d.verdict == "faster"


def test_a_guessed_size_is_a_caveat_even_when_call_inputs_are_unknown() -> None:
    a = _facts([1000.0] * 5, problem_size=64.0, problem_size_guessed=True)
    d = checked(diff_facts(a, replace(a, problem_size=20000.0)))
    assert d.comparability.status == "comparable with caveats"


def test_a_given_size_that_differs_still_refuses_unless_the_call_is_the_same() -> None:
    a = _facts([1000.0] * 5, problem_size=64.0)
    d = checked(diff_facts(a, replace(a, problem_size=4096.0)))
    assert d.comparability.status == "not comparable"
    assert exit_status(d, 5.0) == 2
    a = replace(a, call_inputs=CALL)
    d = checked(diff_facts(a, replace(a, problem_size=4096.0)))
    assert d.comparability.status == "comparable with caveats"


def test_other_call_inputs_are_not_comparable_and_say_both() -> None:
    a = _facts([1000.0] * 5, call_inputs=CALL)
    d = checked(diff_facts(a, replace(a, call_inputs=("float32[4096, 64]", "int"))))
    assert d.comparability.status == "not comparable"
    (reason,) = d.comparability.blocking
    assert "256, 64" in reason and "4096, 64" in reason


def test_heavy_shape_changes_under_the_same_call_are_a_caveat() -> None:
    """Ops outside what the call was given (a loader's) change shapes: a caveat, listed."""
    a = _facts([1000.0] * 5, call_inputs=CALL)
    bigger = dict(a.ops)
    bigger["aten::mm"] = replace(a.ops["aten::mm"], input_shapes="[[20000, 64], [64, 64]]")
    d = checked(diff_facts(a, replace(a, ops=bigger)))
    assert d.comparability.status == "comparable with caveats"
    assert any(x.what == "input shapes" and x.status == "caveat"
               for x in d.comparability.differences)
    # without recorded call inputs the same change still refuses
    d = checked(diff_facts(replace(a, call_inputs=None), replace(a, ops=bigger, call_inputs=None)))
    assert d.comparability.status == "not comparable"


def test_other_thread_counts_are_a_listed_caveat() -> None:
    a = _facts([1000.0] * 5, intra_op_threads=1)
    d = checked(diff_facts(a, replace(a, intra_op_threads=2)))
    assert d.comparability.status == "comparable with caveats"
    assert ("threads: 1 in A, 2 in B: thread count alone can change the step several-fold"
            in d.comparability.caveats)
    assert "threads: 1 in A, 2 in B" in render_text(d)


def test_same_or_unknown_threads_say_nothing() -> None:
    a = _facts([1000.0] * 5, intra_op_threads=2)
    for b in (a, replace(a, intra_op_threads=None)):
        assert checked(diff_facts(a, b)).comparability.status == "comparable"


def test_another_machine_or_python_is_a_listed_caveat() -> None:
    a = _facts([1000.0] * 5, host="vm", versions={"torch": "2.11.0+cu130", "cuda": "cu130",
                                                   "python": "3.12.3"})
    b = replace(a, host="gpu-box", versions={**a.versions, "python": "3.11.7"})
    d = checked(diff_facts(a, b))
    assert d.comparability.status == "comparable with caveats"
    listed = {x.what: x for x in d.comparability.differences}
    assert listed["host"].status == listed["python"].status == "caveat"
    assert (listed["host"].a, listed["host"].b) == ("vm", "gpu-box")
    assert "another machine" in listed["host"].text
    unknown = replace(a, host=None)  # a trace without a manifest says nothing of its host
    assert checked(diff_facts(a, unknown)).comparability.status == "comparable"
