"""How much slower a triggered window's job was, and how sure: from the step times the watcher
timed on the host clock, without the profiler (the trigger's ``baseline_step_us`` and
``recent_step_us``), not from the few profiled steps, which the profiler inflates.

The change and its interval are the diff's (significance.py: the median step's change, a
bootstrap of each side's calls plus a spread between the sides). Both sides are calls of one
process, so what a process changes against the next (placement, clocks) is the same on
both; what moves within a process over time (the machine's load) is measured by each side's
thirds (``blocks``). The floor is therefore the least spread the comparison core ever assumes
(``REPEATS_FLOOR_PCT``), not the between-process floor of one run a side. The baseline's
calls are the normal ones (a slow call never enters it); the recent ones are every call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from autoprof.analysis.diff.significance import REPEATS_FLOOR_PCT, Change, median_change
from autoprof.runfolder.trigger import TriggerRecord

UntracedVerdict = Literal["slower", "faster", "no change", "cannot tell", "not judged"]
SAME_PROCESS_FLOOR_PCT = REPEATS_FLOOR_PCT


@dataclass(frozen=True)
class Untraced:
    """The untraced step time before (the baseline) and at the trigger (its last calls), in
    ms; ``change`` with its interval when the trigger carries the step times (None: an older
    manifest, only the two medians); ``verdict`` and ``reason`` from it."""

    before_ms: float | None
    after_ms: float | None
    change: Change | None
    verdict: UntracedVerdict
    reason: str

    @property
    def ratio(self) -> float | None:
        if self.before_ms is None or self.after_ms is None or self.before_ms <= 0:
            return None
        return self.after_ms / self.before_ms

    def to_json(self) -> dict[str, object]:
        change = self.change
        return {"before_ms": self.before_ms, "after_ms": self.after_ms, "ratio": self.ratio,
                "verdict": self.verdict, "reason": self.reason,
                "samples_before": None if change is None else change.samples_a,
                "samples_after": None if change is None else change.samples_b,
                "step_time": None if change is None else change.to_json()}

    def line(self) -> str:
        """One line: before -> after, the ratio, the interval and what it rests on."""
        if self.before_ms is None or self.after_ms is None:
            return f"untraced step: {self.reason}"
        ratio = self.ratio
        head = (f"untraced step: {_ms(self.before_ms)} -> {_ms(self.after_ms)}"
                + ("" if ratio is None else f", {_x(ratio)}"))
        change = self.change
        if change is None or change.ci_low_pct is None or change.ci_high_pct is None:
            return f"{head} ({self.reason})"
        low, high = 1 + change.ci_low_pct / 100, 1 + change.ci_high_pct / 100
        return (f"{head} (95% CI {_x(low)} .. {_x(high)}; the baseline's {change.samples_a} "
                f"calls vs the {change.samples_b} calls before the trigger)")


def _ms(value_ms: float) -> str:
    return f"{value_ms:.3g} ms"


def _x(ratio: float) -> str:
    return f"{ratio:.2f}x" if ratio < 100 else f"{ratio:,.0f}x"


def untraced(trigger: TriggerRecord) -> Untraced:
    """The untraced comparison of a trigger (see the module docstring)."""
    before, after = trigger.baseline_step_us, trigger.recent_step_us
    if not before or not after:
        why = ("this trigger holds no step-time samples (a manifest of an older autoprof): the "
               "trigger's two medians only, no interval" if trigger.baseline_ms is not None
               and trigger.current_ms is not None else
               "no baseline was learnt before this trigger: no untraced comparison")
        return Untraced(trigger.baseline_ms, trigger.current_ms, None, "not judged", why)
    change = median_change(before, after, noise_floor_pct=SAME_PROCESS_FLOOR_PCT)
    if change.median_a is None or change.median_b is None:
        return Untraced(trigger.baseline_ms, trigger.current_ms, change, "cannot tell",
                        change.reason)
    verdict, reason = _verdict(change, trigger.threshold_pct)
    return Untraced(change.median_a / 1e3, change.median_b / 1e3, change, verdict, reason)


def _verdict(change: Change, threshold_pct: float | None) -> tuple[UntracedVerdict, str]:
    """``slower`` or ``faster`` when the interval excludes zero; ``no change`` when it
    includes zero and lies within the watch's threshold either way; else ``cannot tell``."""
    if change.verdict in ("slower", "faster"):
        return ("slower" if change.verdict == "slower" else "faster"), change.reason
    low, high = change.ci_low_pct, change.ci_high_pct
    if low is None or high is None:
        return "cannot tell", change.reason
    if threshold_pct is not None:
        grow = 1 + threshold_pct / 100
        if 1 / grow < 1 + low / 100 and 1 + high / 100 < grow:
            return "no change", (f"the interval includes zero and lies within the watch's "
                                 f"threshold ({threshold_pct:g}%) either way")
    return "cannot tell", change.reason
