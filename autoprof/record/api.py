"""The object users import: ``autoprof`` is the decorator and carries ``region``,
``check``, ``flush``, ``Schedule`` and (lazily) ``load``.

It sits above the decorator and ``check``, which never import it: the arrows point one way
(api -> check -> whatif -> once -> decorator -> session).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, overload

from autoprof.record.decorator import decorate, flush, region
from autoprof.record.options import Schedule, make_options
from autoprof.record.watch import Watch, trigger

F = TypeVar("F", bound=Callable[..., Any])


class Autoprof:
    """``@autoprof`` / ``@autoprof(name=..., warmup=..., schedule=...)``; also carries
    ``region``, ``check``, ``flush``, ``Schedule`` and (lazily) ``load``."""

    Schedule = Schedule
    Watch = Watch

    @overload
    def __call__(self, fn: F, /) -> F: ...

    @overload
    def __call__(self, fn: None = None, /, **options: Any) -> Callable[[F], F]: ...

    def __call__(self, fn: Any = None, /, **options: Any) -> Any:
        if fn is not None:
            if options or not callable(fn):
                raise TypeError(
                    "use @autoprof or @autoprof(name=..., ...): options are keywords only, "
                    f"got a positional {type(fn).__name__}"
                )
            return decorate(fn, make_options())
        opts = make_options(**options)
        return lambda f: decorate(f, opts)

    region = staticmethod(region)

    @staticmethod
    def check(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        # imported on first use: ``from autoprof import autoprof`` stays without what-if
        from autoprof.record.check import check

        return check(fn, *args, **kwargs)

    flush = staticmethod(flush)
    trigger = staticmethod(trigger)

    def __getattr__(self, name: str) -> Any:
        if name in ("load", "Run", "TraceError"):
            import autoprof.analysis

            return getattr(autoprof.analysis, name)
        raise AttributeError(f"autoprof has no attribute {name!r}")

    def __repr__(self) -> str:
        return "<autoprof decorator>"


autoprof = Autoprof()
