"""Can A and B be compared at all? Each difference between the runs, and what it allows.

``not comparable`` (no speed verdict): another device, another number of ranks, the decorated
function called with other arguments (the manifest's ``call_inputs``: each tensor's dtype and
shape, each other argument's type), another problem size the run states (the manifest's
``size``, a folder named like ``n64``), or the heaviest ops running on other input shapes
(64x64 against 4096x4096 is another program, not a regression) - the last two unless the
recorded call inputs are the same. ``comparable with caveats``: a problem size only guessed
(the first op's largest dimension), another intra-op thread count, another host (machine),
another torch, CUDA or Python build, other profiler options or schedule, another function
name, other step counts, or shapes that differ only on light ops (or anywhere, when the call
inputs are the same).
``comparable``: none of these.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from autoprof.analysis.diff.facts import RunFacts

Comparable = Literal["comparable", "comparable with caveats", "not comparable"]

# profiler options that change what a profiled step costs (so its time)
MEASURING_OPTIONS = ("record_shapes", "profile_memory", "with_stack", "with_flops",
                     "with_modules", "sync", "activities")
# share of A's op time (self CPU + self device) on ops whose input shapes changed, above
# which the runs solve another problem size
SHAPES_NOT_COMPARABLE_PCT = 20.0


DifferenceStatus = Literal["not comparable", "caveat"]


@dataclass(frozen=True)
class Difference:
    """One way A and B differ, and what it does to the comparison (``status``)."""

    what: str  # "device", "ranks", "problem size", "input shapes", "torch", "option sync", ...
    a: object
    b: object
    status: DifferenceStatus
    text: str  # one line saying it, as in not_comparable_because / caveats

    def to_json(self) -> dict[str, object]:
        return {"what": self.what, "a": _jsonable(self.a), "b": _jsonable(self.b),
                "status": self.status, "text": self.text}


def _jsonable(value: object) -> object:
    """A difference's value as JSON keeps it: scalars as they are, anything else as text."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return repr(value)


@dataclass(frozen=True)
class Comparability:
    status: Comparable
    blocking: list[str]  # the reasons the runs are not comparable
    caveats: list[str]
    differences: list[Difference] = field(default_factory=list)  # every one, with its status

    def to_json(self) -> dict[str, object]:
        return {"status": self.status, "not_comparable_because": self.blocking,
                "caveats": self.caveats,
                "differences": [d.to_json() for d in self.differences]}


def _op_weight_us(facts: RunFacts, name: str) -> float:
    op = facts.ops[name]
    return op.self_cpu_us_per_step + op.self_device_us_per_step


def _shape_changes(a: RunFacts, b: RunFacts) -> tuple[float, list[str]]:
    """The share of A's op time on ops whose most common input shapes differ in B."""
    total_us = sum(_op_weight_us(a, name) for name in a.ops) or 1.0
    changed_us, names = 0.0, []
    for name, op in a.ops.items():
        other = b.ops.get(name)
        if other is None or not op.input_shapes or not other.input_shapes:
            continue
        if op.input_shapes != other.input_shapes:
            changed_us += _op_weight_us(a, name)
            names.append(name)
    names.sort(key=lambda n: -_op_weight_us(a, n))
    return changed_us / total_us * 100.0, names


def _heaviest_shapes(a: RunFacts, b: RunFacts, shapes: list[str]) -> tuple[str, str]:
    """The input shapes of the heaviest op whose shapes changed, in A and in B."""
    name = shapes[0]
    return f"{name} {a.ops[name].input_shapes}", f"{name} {b.ops[name].input_shapes}"


def _differs(key: str, va: object, vb: object,
             status: DifferenceStatus = "caveat") -> Difference | None:
    if va == vb:
        return None
    return Difference(key, va, vb, status, f"{key}: {va!r} in A, {vb!r} in B")


def _option_caveats(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Difference | None]:
    notes = [_differs(f"option {k}", a.get(k), b.get(k)) for k in MEASURING_OPTIONS]
    notes.append(_differs("schedule", a.get("schedule"), b.get("schedule")))
    return notes


def _same_call(a: RunFacts, b: RunFacts) -> bool:
    """Both manifests say what the decorated function was called with, and it is the same."""
    return a.call_inputs is not None and a.call_inputs == b.call_inputs


def _inputs_difference(a: RunFacts, b: RunFacts) -> Difference | None:
    if a.call_inputs is None or b.call_inputs is None or a.call_inputs == b.call_inputs:
        return None
    ta, tb = ", ".join(a.call_inputs), ", ".join(b.call_inputs)
    return Difference("call inputs", ta, tb, "not comparable",
                      f"call inputs: ({ta}) in A, ({tb}) in B: the function was called "
                      "with other arguments")


def _size_difference(a: RunFacts, b: RunFacts) -> Difference | None:
    """A size the run states (the manifest's, a folder named like n64) that differs refuses
    the comparison unless the recorded call inputs are the same; a guessed one (the first
    op's largest dimension) is only a caveat."""
    if a.problem_size is None or b.problem_size is None or a.problem_size == b.problem_size:
        return None
    guessed = a.problem_size_guessed or b.problem_size_guessed
    status: DifferenceStatus = "caveat" if guessed or _same_call(a, b) else "not comparable"
    how = " (guessed from the first op's shapes)" if guessed else ""
    return Difference("problem size", a.problem_size, b.problem_size, status,
                      f"problem size{how}: {a.problem_size:g} in A, {b.problem_size:g} in B")


def _shapes_difference(a: RunFacts, b: RunFacts, shapes_pct: float,
                       shapes: list[str]) -> Difference | None:
    if shapes_pct <= 0:
        return None
    if shapes_pct > SHAPES_NOT_COMPARABLE_PCT and not _same_call(a, b):
        return Difference(
            "input shapes", *_heaviest_shapes(a, b, shapes), "not comparable",
            f"input shapes: ops holding {shapes_pct:.0f}% of A's op time run on "
            f"other shapes in B ({', '.join(shapes[:3])}): another problem size")
    where = ("light ops" if shapes_pct <= SHAPES_NOT_COMPARABLE_PCT
             else "ops the same call inputs reach")
    return Difference(
        "input shapes", *_heaviest_shapes(a, b, shapes), "caveat",
        f"input shapes differ on {where} ({shapes_pct:.1f}% of A's op time: "
        f"{', '.join(shapes[:3])})")


def _threads_difference(a: RunFacts, b: RunFacts) -> Difference | None:
    if a.intra_op_threads is None or b.intra_op_threads is None or (
            a.intra_op_threads == b.intra_op_threads):
        return None
    return Difference("threads", a.intra_op_threads, b.intra_op_threads, "caveat",
                      f"threads: {a.intra_op_threads} in A, {b.intra_op_threads} in B: "
                      "thread count alone can change the step several-fold")


def _blocking(a: RunFacts, b: RunFacts) -> list[Difference | None]:
    return [
        None if a.device == b.device else Difference(
            "device", a.device, b.device, "not comparable",
            f"device: {a.device} in A, {b.device} in B"),
        None if a.world_size == b.world_size else Difference(
            "ranks", a.world_size, b.world_size, "not comparable",
            f"ranks: {a.world_size} in A, {b.world_size} in B"),
        _inputs_difference(a, b)]


def _host_difference(a: RunFacts, b: RunFacts) -> Difference | None:
    if a.host is None or b.host is None or a.host == b.host:
        return None
    return Difference("host", a.host, b.host, "caveat",
                      f"host: {a.host!r} in A, {b.host!r} in B: another machine, whose "
                      "speed is in the change")


def _caveats(a: RunFacts, b: RunFacts) -> list[Difference | None]:
    notes = [_differs(k, a.versions.get(k), b.versions.get(k))
             for k in ("torch", "cuda", "python")]
    notes += [_host_difference(a, b), _threads_difference(a, b)]
    notes.append(_differs("function", a.name, b.name))
    if a.steps != b.steps:
        notes.append(Difference("steps", a.steps, b.steps, "caveat",
                                f"steps: {a.steps} in A, {b.steps} in B"))
    return notes + _option_caveats(a.options, b.options)


def comparability(a: RunFacts, b: RunFacts) -> Comparability:
    """Every difference between A and B that bears on comparing their step times, each with
    its status; the runs' status is the worst of them."""
    shapes_pct, shapes = _shape_changes(a, b)
    found = [d for d in (*_blocking(a, b), _size_difference(a, b),
                         _shapes_difference(a, b, shapes_pct, shapes), *_caveats(a, b))
             if d is not None]
    blocking = [d.text for d in found if d.status == "not comparable"]
    caveats = [d.text for d in found if d.status == "caveat"]
    status: Comparable = ("not comparable" if blocking
                          else "comparable with caveats" if caveats else "comparable")
    return Comparability(status, blocking, caveats, found)
