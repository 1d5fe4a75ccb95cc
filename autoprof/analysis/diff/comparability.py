"""Can A and B be compared at all? Each difference between the runs, and what it allows.

``not comparable`` (no speed verdict): another device, another number of ranks, another
problem size (the manifest's ``size``, else the first op's shapes, else a folder named like
``n64``), or the heaviest ops running on other input shapes (64x64 against 4096x4096 is
another program, not a regression). ``comparable with caveats``: another torch or
CUDA build, other profiler options or schedule, another function name, other step counts,
or shapes that differ only on light ops. ``comparable``: none of these.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from autoprof.analysis.diff.facts import RunFacts

Comparable = Literal["comparable", "comparable with caveats", "not comparable"]

# profiler options that change what a profiled step costs (so its time)
MEASURING_OPTIONS = ("record_shapes", "profile_memory", "with_stack", "with_flops",
                     "with_modules", "sync", "activities")
# share of A's op time (self CPU + self device) on ops whose input shapes changed, above
# which the runs solve another problem size
SHAPES_NOT_COMPARABLE_PCT = 20.0


@dataclass(frozen=True)
class Comparability:
    status: Comparable
    blocking: list[str]  # the reasons the runs are not comparable
    caveats: list[str]

    def to_json(self) -> dict[str, object]:
        return {"status": self.status, "not_comparable_because": self.blocking,
                "caveats": self.caveats}


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


def _differs(key: str, va: object, vb: object) -> str | None:
    return None if va == vb else f"{key}: {va!r} in A, {vb!r} in B"


def _option_caveats(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    notes = [_differs(f"option {k}", a.get(k), b.get(k)) for k in MEASURING_OPTIONS]
    notes.append(_differs("schedule", a.get("schedule"), b.get("schedule")))
    return [n for n in notes if n]


def _blocking(a: RunFacts, b: RunFacts, shapes_pct: float, shapes: list[str]) -> list[str]:
    reasons = []
    if a.device != b.device:
        reasons.append(f"device: {a.device} in A, {b.device} in B")
    if a.world_size != b.world_size:
        reasons.append(f"ranks: {a.world_size} in A, {b.world_size} in B")
    if a.problem_size is not None and b.problem_size is not None and (
            a.problem_size != b.problem_size):
        reasons.append(f"problem size: {a.problem_size:g} in A, {b.problem_size:g} in B")
    if shapes_pct > SHAPES_NOT_COMPARABLE_PCT:
        reasons.append(f"input shapes: ops holding {shapes_pct:.0f}% of A's op time run on "
                       f"other shapes in B ({', '.join(shapes[:3])}): another problem size")
    return reasons


def _caveats(a: RunFacts, b: RunFacts, shapes_pct: float, shapes: list[str]) -> list[str]:
    notes = [_differs(k, a.versions.get(k), b.versions.get(k)) for k in ("torch", "cuda")]
    notes.append(_differs("function", a.name, b.name))
    if a.steps != b.steps:
        notes.append(f"steps: {a.steps} in A, {b.steps} in B")
    if 0 < shapes_pct <= SHAPES_NOT_COMPARABLE_PCT:
        notes.append(f"input shapes differ on light ops ({shapes_pct:.1f}% of A's op time: "
                     f"{', '.join(shapes[:3])})")
    return [n for n in notes if n] + _option_caveats(a.options, b.options)


def comparability(a: RunFacts, b: RunFacts) -> Comparability:
    """Every difference between A and B that bears on comparing their step times."""
    shapes_pct, shapes = _shape_changes(a, b)
    blocking = _blocking(a, b, shapes_pct, shapes)
    caveats = _caveats(a, b, shapes_pct, shapes)
    status: Comparable = ("not comparable" if blocking
                          else "comparable with caveats" if caveats else "comparable")
    return Comparability(status, blocking, caveats)
