"""Why the step changed: the change spread over the seven buckets, the ops and the kernels.

Every row is per profiled step (µs), ``delta_us`` = B - A; rows are ranked by ``|delta_us|``
so the first row explains most of the change. An op row is an outermost op, the one the user
called, with its children rolled up (user_ops.py); a self-op row is one op's self CPU time
(with the CUDA runtime calls it makes, which the profiler nests under it) plus the GPU work it
launched; a kernel's is its GPU time. Kernels present in only one run are ``new`` or
``gone``; a gone and a new kernel launched by the same op are one ``renamed`` kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from autoprof.analysis.diff.facts import KernelFacts, OpFacts, RunFacts
from autoprof.analysis.diff.user_ops import HOST_SYNCS, UserOpFacts
from autoprof.units import fmt_us

CauseKind = Literal["bucket", "op", "self_op", "kernel"]
TOP_ROWS = 10


@dataclass(frozen=True)
class Cause:
    kind: CauseKind
    name: str
    a_us: float
    b_us: float
    share_pct: float | None  # of the step's change (signed: same sign as the change = explains it)
    note: str = ""
    paced_delta_us: float | None = None  # an op's change beyond B's host pace (op_causes)

    @property
    def delta_us(self) -> float:
        return self.b_us - self.a_us

    @property
    def ranked_us(self) -> float:
        """What ranks the row: its change beyond the host's pace where known, else its
        change."""
        return self.delta_us if self.paced_delta_us is None else self.paced_delta_us

    def to_json(self) -> dict[str, object]:
        return {"kind": self.kind, "name": self.name, "a_us_per_step": self.a_us,
                "b_us_per_step": self.b_us, "delta_us_per_step": self.delta_us,
                "share_of_change_pct": self.share_pct, "note": self.note}


def _share(delta_us: float, step_delta_us: float) -> float | None:
    return delta_us / step_delta_us * 100.0 if step_delta_us else None


def _ranked(rows: list[Cause]) -> list[Cause]:
    return sorted(rows, key=lambda c: (-abs(c.delta_us), c.name))


def bucket_causes(a: RunFacts, b: RunFacts, step_delta_us: float) -> list[Cause]:
    names = list(dict.fromkeys([*a.buckets_us, *b.buckets_us]))
    rows = [Cause("bucket", n, a.buckets_us.get(n, 0.0), b.buckets_us.get(n, 0.0),
                  _share(b.buckets_us.get(n, 0.0) - a.buckets_us.get(n, 0.0), step_delta_us))
            for n in names]
    return _ranked(rows)


def _op_us(op: OpFacts | None) -> float:
    return 0.0 if op is None else op.self_cpu_us_per_step + op.self_device_us_per_step


def _op_note(a: OpFacts | UserOpFacts | None, b: OpFacts | UserOpFacts | None) -> str:
    if a is None:
        return "new"
    if b is None:
        return "gone"
    notes = []
    if a.input_types and b.input_types and a.input_types != b.input_types:
        notes.append(f"input types {a.input_types} -> {b.input_types}")
    if a.input_shapes and b.input_shapes and a.input_shapes != b.input_shapes:
        notes.append(f"shapes {a.input_shapes} -> {b.input_shapes}")
    if abs(a.calls_per_step - b.calls_per_step) >= 0.5:
        notes.append(f"calls per step {a.calls_per_step:g} -> {b.calls_per_step:g}")
    return "; ".join(notes)


def self_op_causes(a: RunFacts, b: RunFacts, step_delta_us: float) -> list[Cause]:
    """The ops by self time (each op's own time, its children apart)."""
    rows = []
    for name in dict.fromkeys([*a.ops, *b.ops]):
        oa, ob = a.ops.get(name), b.ops.get(name)
        a_us, b_us = _op_us(oa), _op_us(ob)
        if a_us or b_us:
            rows.append(Cause("self_op", name, a_us, b_us, _share(b_us - a_us, step_delta_us),
                              _op_note(oa, ob)))
    return _ranked(rows)[:TOP_ROWS]


def _inside_note(name: str, a: UserOpFacts | None, b: UserOpFacts | None) -> str:
    """The child (not the op itself) that holds most of the op's change, when one does."""
    ca = a.children_us_per_step if a else {}
    cb = b.children_us_per_step if b else {}
    inside = {c: cb.get(c, 0.0) - ca.get(c, 0.0) for c in {*ca, *cb} if c != name}
    total = (b.us_per_step if b else 0.0) - (a.us_per_step if a else 0.0)
    if not inside or not total:
        return ""
    child = max(sorted(inside), key=lambda c: abs(inside[c]))
    if inside[child] / total < 0.5:
        return ""
    sign = "+" if inside[child] >= 0 else "-"
    return f"most of it in {child} ({sign}{fmt_us(abs(inside[child]))} per step)"


def _sync_note(a: UserOpFacts | None, b: UserOpFacts | None) -> str:
    """What the op waits for, when B's op syncs and A's did not (or syncs more)."""
    if b is None or not b.syncs or (a is not None and a.syncs == b.syncs):
        return ""
    waits = sorted(b.syncs & HOST_SYNCS)
    if waits:
        return f"a sync: the host waits for the GPU ({', '.join(waits)})"
    return ("a sync: reads a tensor's value on the host (the host waits for the device "
            "when the tensor is on a GPU)")


def same_call(oa: UserOpFacts, ob: UserOpFacts) -> bool:
    """Both runs called the op alike: as often, on the same input types and shapes."""
    return (abs(oa.calls_per_step - ob.calls_per_step) < 0.5
            and oa.input_types == ob.input_types and oa.input_shapes == ob.input_shapes)


def host_pace(a: RunFacts, b: RunFacts) -> float:
    """How much slower B's host ran than A's as a whole, on CUDA runs: the median, over the
    ops both called alike, of B's host time over A's (1.0 without such ops, and on CPU runs,
    whose ops' host time is their work). On a GPU an op's host time is its dispatch and
    launch, which a process's pace moves alike for every op (the run's level,
    significance.py); a cause moves its own."""
    if not (a.is_cuda and b.is_cuda):
        return 1.0
    ratios = [ob.host_us_per_step / oa.host_us_per_step
              for name, oa in a.user_ops.items()
              if (ob := b.user_ops.get(name)) is not None and oa.host_us_per_step > 0
              and ob.host_us_per_step > 0 and same_call(oa, ob)]
    return float(np.median(ratios)) if ratios else 1.0


def op_causes(a: RunFacts, b: RunFacts, step_delta_us: float) -> list[Cause]:
    """The outermost ops the user called, each with all it ran rolled up (user_ops.py),
    ranked by their change beyond B's host pace (``host_pace``): an op whose host time only
    followed the whole process's pace explains nothing of its own. The rows keep their
    measured times; ``paced_delta_us`` is what the ranking reads."""
    pace = host_pace(a, b)
    rows = []
    for name in dict.fromkeys([*a.user_ops, *b.user_ops]):
        oa, ob = a.user_ops.get(name), b.user_ops.get(name)
        a_us = oa.us_per_step if oa else 0.0
        b_us = ob.us_per_step if ob else 0.0
        if a_us or b_us:
            notes = [_op_note(oa, ob), _sync_note(oa, ob), _inside_note(name, oa, ob)]
            paced = b_us - a_us - (pace - 1.0) * (oa.host_us_per_step if oa else 0.0)
            rows.append(Cause("op", name, a_us, b_us, _share(b_us - a_us, step_delta_us),
                              "; ".join(n for n in notes if n), paced))
    return sorted(rows, key=lambda c: (-abs(c.ranked_us), c.name))[:TOP_ROWS]


def _renames(a: RunFacts, b: RunFacts) -> dict[str, str]:
    """new kernel -> the gone kernel it replaces (both launched by the same op)."""
    gone_by_op: dict[str, list[str]] = {}
    for name in sorted(set(a.kernels) - set(b.kernels)):
        if a.kernels[name].op:
            gone_by_op.setdefault(a.kernels[name].op, []).append(name)
    renames = {}
    for name in sorted(set(b.kernels) - set(a.kernels)):
        candidates = gone_by_op.get(b.kernels[name].op)
        if candidates:
            renames[name] = candidates.pop(0)
    return renames


def _launch_note(ka: KernelFacts, kb: KernelFacts) -> str:
    if abs(ka.launches_per_step - kb.launches_per_step) < 0.5:
        return ""
    return f"launches per step {ka.launches_per_step:g} -> {kb.launches_per_step:g}"


def kernel_causes(a: RunFacts, b: RunFacts, step_delta_us: float) -> list[Cause]:
    renames = _renames(a, b)
    renamed_from = set(renames.values())
    rows = []
    for new, old in renames.items():
        a_us, b_us = a.kernels[old].us_per_step, b.kernels[new].us_per_step
        rows.append(Cause("kernel", new, a_us, b_us, _share(b_us - a_us, step_delta_us),
                          f"renamed from {old} (both launched by {b.kernels[new].op})"))
    for name in dict.fromkeys([*a.kernels, *b.kernels]):
        if name in renames or name in renamed_from:
            continue
        ka, kb = a.kernels.get(name), b.kernels.get(name)
        a_us = ka.us_per_step if ka else 0.0
        b_us = kb.us_per_step if kb else 0.0
        note = "new" if ka is None else "gone" if kb is None else _launch_note(ka, kb)
        rows.append(Cause("kernel", name, a_us, b_us, _share(b_us - a_us, step_delta_us), note))
    return _ranked(rows)[:TOP_ROWS]
