"""``autoprof.check(fn, *args, try_fixes=...)``'s second half: try the fixes, profile the best,
write ``whatif.json`` into the run folder (``check`` then returns the run, reloaded)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autoprof.record.decorator import decorate
from autoprof.record.once import profile_once
from autoprof.record.warn import note
from autoprof.record.whatif.auto import interval_for, predicted_for, resolve, suggested_by
from autoprof.record.whatif.copying import NotCopyable
from autoprof.record.whatif.fixes import FIXES
from autoprof.record.whatif.guard import user_state_kept
from autoprof.record.whatif.harness import DEFAULT_SAMPLES, Timing
from autoprof.record.whatif.result import FixResult
from autoprof.record.whatif.trial import Trial, best, try_fixes
from autoprof.runfolder import MANIFEST, MAX_MANIFEST_BYTES, ManifestError, read_manifest
from autoprof.runfolder.whatif import same_inputs_note, whatif_record, write_whatif
from autoprof.units import fmt_us

if TYPE_CHECKING:
    from autoprof.analysis.report.model import Report

TryFixes = str | Sequence[str]  # anything else is refused by ``validate``
FIXED_RUNS = "whatif"  # the profiled best fix lands in <run>/whatif/<name>.<fix>/<run_id>/
SLOWER_AFTER_PROFILING = 1.25  # original timed after profiling / its warm-up calls before


def validate(fixes: object) -> None:
    """Raise ValueError for an unknown fix name or a value that is not one of those accepted
    (``auto.ACCEPTED``) before anything runs."""
    resolve(fixes)


@dataclass
class Measured:
    """The fixes' trials and the original's timing, and whether a profiler had run before
    (CUPTI stays attached after torch.profiler and slows every later kernel launch)."""

    names: list[str]
    baseline: Timing | None  # None when the arguments could not be copied (nothing was run)
    trials: list[Trial]
    after_profiling: bool
    harness_us: float | None = None  # an identity call timed beside the original


def measure_fixes(fn: Any, args: Sequence[Any], kwargs: dict[str, Any], names: Sequence[str],
                  *, after_profiling: bool = False, samples: int = DEFAULT_SAMPLES) -> Measured:
    """Time the original and each named fix (``resolve`` the names first). Arguments that
    cannot be copied are a refusal, not an error: every fix is "not applicable" with the
    reason, and nothing runs on the user's own objects."""
    try:
        baseline, trials = try_fixes(fn, args, kwargs, names, samples=samples, on_result=_note)
    except NotCopyable as exc:
        refused = [Trial(FixResult(n, FIXES[n].doc, applicable=False, status="not applicable",
                                   reason=f"not tried: {exc}")) for n in names]
        for trial in refused:
            _note(trial.result)
        return Measured(list(names), None, refused, after_profiling)
    harness = [t.result.harness_us for t in trials if t.result.harness_us is not None]
    return Measured(list(names), baseline, trials, after_profiling,
                    statistics.median(harness) if harness else None)


def what_if(
    fn: Any,
    args: Sequence[Any],
    kwargs: dict[str, Any],
    fixes: TryFixes,
    *,
    report: Report | None = None,
    run_dir: Path | None = None,
    options: Any = None,
    samples: int = DEFAULT_SAMPLES,
    measured: Measured | None = None,
) -> list[dict[str, Any]]:
    """Try ``fixes`` on ``fn(*args, **kwargs)`` (or take ``measured``, timed before the run was
    profiled); with ``run_dir``, profile the best fix into ``run_dir/whatif/`` and write
    ``run_dir/whatif.json``. ``report``, the run's typed report, chooses the fixes of
    ``"auto"`` and gives each the findings behind it and its predicted speedup. Returns the
    result records."""
    if measured is None:
        measured = measure_fixes(fn, args, kwargs, resolve(fixes, report),
                                 after_profiling=run_dir is not None, samples=samples)
    trials = measured.trials
    for trial in trials:
        fix = trial.result.fix
        trial.result.suggested_by = suggested_by(fix, report)
        trial.result.set_prediction(predicted_for(fix, report), interval_for(fix, report))
    top = best(trials)
    if top is not None and run_dir is not None and options is not None:
        _profile(top, run_dir, options)
    results = [t.result.to_dict() for t in trials]
    if run_dir is not None:
        write_whatif(run_dir, whatif_record(
            results,
            function=f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', fn)}",
            tried=measured.names,
            baseline_us=measured.baseline.median_us if measured.baseline else None,
            baseline_spread_us=measured.baseline.spread_us if measured.baseline else None,
            clock=measured.baseline.clock if measured.baseline else None,
            harness_us=measured.harness_us,
            **_when(measured, run_dir),
        ))
    return results


def _when(measured: Measured, run_dir: Path) -> dict[str, Any]:
    """When the fixes were timed, the original's untraced warm-up calls before profiling, and
    a note when the timing after profiling ran slower than those calls."""
    about: dict[str, Any] = {"measured": "after profiling" if measured.after_profiling
                             else "before profiling"}
    before = warmup_median_us(run_dir)
    about["warmup_call_us_median"] = before
    base = measured.baseline
    slower = (before is not None and base is not None and measured.after_profiling
              and base.clock == "cuda-events"
              and base.median_us > SLOWER_AFTER_PROFILING * before)
    if slower and base is not None:
        about["note"] = (
            f"the original took {fmt_us(base.median_us)} per call when the fixes "
            f"were timed, {fmt_us(before)} in its warm-up calls before profiling: after "
            "torch.profiler the process launches kernels more slowly (CUPTI stays attached), "
            "which overstates what removing launches gains. Name the fixes (try_fixes=(...)) "
            "to have them timed before profiling.")
    return about


def warmup_median_us(run_dir: Path) -> float | None:
    """The median untraced warm-up call of the run's manifest, in µs (None without one)."""
    try:
        calls = read_manifest(run_dir / MANIFEST, MAX_MANIFEST_BYTES).warmup_call_ms
    except ManifestError:
        return None
    return statistics.median(calls) * 1e3 if calls else None


def _note(r: FixResult) -> None:
    if r.speedup is not None:
        what = (f"{r.status}, {r.speedup:.2f}x ({fmt_us(r.baseline_us)} -> "
                f"{fmt_us(r.fixed_us)} per call)")
        both = same_inputs_note(r.to_dict())
        if both is not None:
            what = (f"{r.status}: {both} ({fmt_us(r.baseline_us)} -> {fmt_us(r.fixed_us)}, "
                    f"{fmt_us(r.same_inputs_us)} per call)")
    else:
        what = f"{r.status}: {r.reason}"
    note(f"autoprof: what-if {r.fix}: {what}")


def _profile(trial: Trial, run_dir: Path, options: Any) -> None:
    """Profile the fixed function like the original (same options), note its verdict."""
    if trial.applied is None or trial.inputs is None:
        return
    result = trial.result
    name = f"{run_dir.parent.name}.{result.fix}"
    fixed_options = replace(options, name=name, out_dir=str(run_dir / FIXED_RUNS),
                            try_fixes=None)
    args, kwargs = trial.inputs
    try:
        with user_state_kept():
            run = profile_once(decorate(trial.applied.fn, fixed_options), *args, **kwargs)
    except Exception as exc:
        result.fixed_verdict_reason = f"profiling the fixed function failed: {exc}"
        return
    if run is None:  # autoprof switched off (AUTOPROF=0)
        return
    result.fixed_run = Path(getattr(run, "path", run)).relative_to(run_dir).as_posix()
    verdict = getattr(run, "verdict", None)
    if verdict is None:  # a Path: the analysis cannot be imported here (torch-only machine)
        result.fixed_verdict_reason = "not analysed here: run `autoprof summary` on fixed_run"
        return
    try:
        kind = verdict()
    except Exception as exc:  # the fixed run stays on disk; its analysis is not the result
        result.fixed_verdict_reason = f"the fixed run could not be analysed: {exc}"
        return
    result.fixed_verdict, result.fixed_verdict_reason = str(kind.kind), str(kind.reason)
