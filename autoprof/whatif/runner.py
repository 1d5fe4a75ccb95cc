"""``autoprof.check(fn, *args, try_fixes=...)``'s second half: try the fixes, profile the best,
write ``whatif.json`` into the run folder (``check`` then returns the run, reloaded)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from autoprof.units import fmt_us
from autoprof.whatif.auto import resolve, suggested_by
from autoprof.whatif.guard import user_state_kept
from autoprof.whatif.harness import DEFAULT_SAMPLES
from autoprof.whatif.record import whatif_record, write_whatif
from autoprof.whatif.result import FixResult
from autoprof.whatif.trial import Trial, best, try_fixes

TryFixes = str | Sequence[str]
FIXED_RUNS = "whatif"  # the profiled best fix lands in <run>/whatif/<name>.<fix>/<run_id>/


def validate(fixes: TryFixes) -> None:
    """Raise ValueError for an unknown fix name before anything runs."""
    resolve(fixes, {})


def what_if(
    fn: Any,
    args: Sequence[Any],
    kwargs: dict[str, Any],
    fixes: TryFixes,
    *,
    summary: dict[str, Any] | None = None,
    run_dir: Path | None = None,
    options: Any = None,
    samples: int = DEFAULT_SAMPLES,
) -> list[dict[str, Any]]:
    """Try ``fixes`` on ``fn(*args, **kwargs)``; with ``run_dir``, profile the best fix into
    ``run_dir/whatif/`` and write ``run_dir/whatif.json``. Returns the result records."""
    names = resolve(fixes, summary)
    baseline, trials = try_fixes(fn, args, kwargs, names, samples=samples, on_result=_note)
    for trial in trials:
        trial.result.suggested_by = suggested_by(trial.result.fix, summary or {})
    top = best(trials)
    if top is not None and run_dir is not None and options is not None:
        _profile(top, run_dir, options)
    results = [t.result.to_dict() for t in trials]
    if run_dir is not None:
        write_whatif(run_dir, whatif_record(
            results,
            function=f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', fn)}",
            tried=names,
            baseline_us=baseline.median_us,
            baseline_spread_us=baseline.spread_us,
            clock=baseline.clock,
        ))
    return results


def _note(r: FixResult) -> None:
    from autoprof._warn import note

    if r.speedup is not None:
        what = (f"{r.status}, {r.speedup:.2f}x ({fmt_us(r.baseline_us)} -> "
                f"{fmt_us(r.fixed_us)} per call)")
    else:
        what = f"{r.status}: {r.reason}"
    note(f"autoprof: what-if {r.fix}: {what}")


def _profile(trial: Trial, run_dir: Path, options: Any) -> None:
    """Profile the fixed function like the original (same options), note its verdict."""
    from autoprof._check import check
    from autoprof._decorator import decorate

    if trial.applied is None or trial.inputs is None:
        return
    result = trial.result
    name = f"{run_dir.parent.name}.{result.fix}"
    fixed_options = replace(options, name=name, out_dir=str(run_dir / FIXED_RUNS),
                            try_fixes=None)
    args, kwargs = trial.inputs
    try:
        with user_state_kept():
            run = check(decorate(trial.applied.fn, fixed_options), *args, **kwargs)
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
