"""``autoprof.check(fn, *args, **kwargs)``: profile a suspected hotspot right now.

Calls ``fn`` as many times as the warm-up plus one full schedule need (``repeat=0`` counts
as one cycle), waits for every artifact, and returns the loaded run (``autoprof.load``), or
the run folder's ``Path`` when the analysis layer cannot load it. With autoprof off
(``AUTOPROF=0``) or no run folder written, ``fn`` is still called as often and ``check``
returns a :class:`NoRun`: falsy (also when the run folder holds nothing usable, e.g. on a
full disk), and any of a run's methods (``verdict()``, ``summary()``)
raises :class:`NoRunError` saying why. The profile itself is :mod:`autoprof.record.once`;
the fixes are :mod:`autoprof.record.whatif`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from autoprof.record.once import load_run, one_schedule, options_of, record, try_load
from autoprof.record.options import Options, env_enabled
from autoprof.record.warn import warn
from autoprof.record.whatif import measure_fixes, resolve_fixes, validate, what_if


class NoRunError(RuntimeError):
    """A run's method asked of what ``autoprof.check`` returned when it recorded no run."""


class NoRun:
    """What ``autoprof.check`` returns when it recorded no run (autoprof off, or no run
    folder written): falsy, and every public attribute raises one :class:`NoRunError` that
    says why, instead of ``None``'s ``AttributeError`` on ``run.verdict()``."""

    __slots__ = ("why",)

    def __init__(self, why: str) -> None:
        self.why = why

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"<autoprof.check: no run ({self.why})>"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # copy, pickle and notebooks probe these: plain answer
            raise AttributeError(name)
        raise NoRunError(f"autoprof.check recorded no run ({self.why}), so there is no "
                         f"{name!r}; the function was still called as often")


OPTION_NAMES = frozenset(Options.__dataclass_fields__) | {"warmup"}


def own_options_refusal(target: Callable[..., Any], kwargs: dict[str, Any]) -> str | None:
    """The line refusing autoprof's own option names given to ``check`` as keywords (they
    would reach ``fn``): None when there are none, or when ``fn`` names each as a parameter
    of its own (then the keyword is really its)."""
    names = sorted(set(kwargs) & OPTION_NAMES)
    params: Mapping[str, inspect.Parameter] = {}
    try:
        params = inspect.signature(target).parameters
    except (TypeError, ValueError):  # a builtin without a signature: nothing is its own
        pass
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    ours = [n for n in names if n not in params or params[n].kind not in kinds]
    if not ours:
        return None
    given = ", ".join(f"{n}=..." for n in ours)
    fn_name = getattr(target, "__name__", "fn")
    return (f"autoprof.check got autoprof's option(s) {given} as keyword(s), which would be "
            f"passed to {fn_name}(): give them to the decorator, "
            f"autoprof.check(autoprof({given})({fn_name}), *args); nothing was recorded")


def _why_off(options: Options) -> str:
    if not env_enabled():
        return "autoprof is off: AUTOPROF=0 in the environment"
    if not options.enabled:
        return "autoprof is off: enabled=False"
    return "no run folder was written: see the warning above"


def check(
    fn: Callable[..., Any], *args: Any, try_fixes: str | Sequence[str] | None = None,
    **kwargs: Any,
) -> Any:
    """Run ``fn(*args, **kwargs)`` through one full profile and return the run.

    ``fn`` may itself be ``@autoprof``-decorated: its options (name, warm-up, schedule, ...)
    are used, on the undecorated function, in a fresh session.
    ``try_fixes`` (``"auto"``, ``"all"`` or fix names; default: the decorator's option) then
    measures each fix on the same arguments and writes ``whatif.json`` (autoprof.record.whatif).
    An autoprof option given here as a keyword (``out_dir=``, ``name=``, ...) that ``fn``
    does not name as a parameter is a TypeError naming the decorator spelling, before
    anything is called or written.
    """
    options, target = options_of(fn)
    refused = own_options_refusal(target, kwargs)
    if refused is not None:
        raise TypeError(refused)
    fixes = try_fixes if try_fixes is not None else options.try_fixes
    if fixes:
        validate(fixes)
    options = one_schedule(options)
    on = options.enabled and env_enabled()
    early = _measure_first(target, args, kwargs, fixes) if fixes and on else None
    _, run_dir = record(target, options, args, kwargs)
    if run_dir is None:
        return NoRun(_why_off(options))
    run, why = try_load(run_dir)
    if why is not None:  # never "written" when nothing usable was (a full disk)
        warn(f"autoprof.check: no usable run was written to {run_dir}: {why}")
        return NoRun(f"no usable run was written to {run_dir}: {why}")
    if fixes:
        _what_if(target, args, kwargs, fixes, run_dir, options, early)
    return run


def _measure_first(target: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                   fixes: str | Sequence[str]) -> Any:
    """Named fixes are timed before profiling: after torch.profiler has run, CUPTI stays
    attached and every kernel launch in the process is slower. ``"auto"`` needs the profile
    to choose, so it is timed after (whatif.json then says so)."""
    if fixes == "auto":
        return None
    try:
        return measure_fixes(target, args, kwargs, resolve_fixes(fixes))
    except Exception as exc:  # the profile that follows raises the user's own error, if any
        warn(f"autoprof.check: timing the fixes before profiling failed "
             f"({type(exc).__name__}: {exc}); they are timed after it")
        return None


def _what_if(target: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
             fixes: str | Sequence[str], run_dir: Path, options: Options, early: Any) -> None:
    """Try the fixes; a failure of autoprof's own is a warning, never the user's error."""
    try:
        run = load_run(run_dir)
        report = run.report() if hasattr(run, "report") else None  # a Path: not analysed
        what_if(target, args, kwargs, fixes, report=report, run_dir=run_dir, options=options,
                measured=early)
    except Exception as exc:
        warn(f"autoprof.check: trying the fixes failed ({type(exc).__name__}: {exc}); "
             f"the run in {run_dir} is complete without them")

