"""The front door: ``@autoprof``, ``@autoprof(...)`` and ``autoprof.region(name)``.

Both are thin shells over :class:`autoprof.record.session.Session` (the ``autoprof``
object that carries them is :mod:`autoprof.record.api`). A call costs one frame more
than the function's own, as under a plain ``functools.wraps`` wrapper (so recursion that works
under such a wrapper works under autoprof); once a session is done the wrapper's code becomes
exactly that plain wrapper's, and a finished region costs one dict lookup plus torch's "is a
profiler on?" check.

Generator functions, coroutine functions and async generators are refused when decorated: a
call only creates the generator or coroutine, so its profile would hold none of the work.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar, cast

from autoprof.record import session as _session
from autoprof.record.compile import skip_autoprof_in_dynamo
from autoprof.record.options import Options, env_enabled, make_options
from autoprof.record.watch.window import WatchedRegion, start_watching, window_call
from autoprof.runfolder import kineto_label

F = TypeVar("F", bound=Callable[..., Any])


def _source_of(fn: Callable[..., Any]) -> tuple[str | None, int | None]:
    code = getattr(inspect.unwrap(fn), "__code__", None)
    if code is None:
        return None, None
    return code.co_filename, code.co_firstlineno


def _callable_name(fn: Any) -> tuple[str, str]:
    """(name, qualname) of what is decorated or checked: a function's own; a builtin of
    torch's namespace as users write it (``torch.matmul``, not ``_VariableFunctionsClass.
    matmul``); a callable object (an ``nn.Module``) by its class, so each kind of module
    gets its own folder."""
    torch = sys.modules.get("torch")
    short = getattr(fn, "__name__", None)
    if inspect.isbuiltin(fn) and torch is not None and getattr(torch, str(short), None) is fn:
        return f"torch.{short}", f"torch.{short}"
    own = getattr(fn, "__qualname__", None) or short
    if isinstance(own, str) and own:
        return own, f"{getattr(fn, '__module__', None) or '?'}.{own}"
    cls = type(fn)
    return cls.__qualname__, f"{cls.__module__}.{cls.__qualname__}"


def _through(fn: Callable[..., Any], session: Any) -> Callable[..., Any]:
    """The wrapper of a session not yet done: begin and end are calls that return, so only
    this frame sits between the caller and ``fn`` (recursion costs what a plain wrapper
    costs, except in the top recorded step of the fast path)."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if session._stepping_thread == _native_id():
            return session._recorded_step(fn, args, kwargs)
        token = session.begin(args, kwargs)
        try:
            result = fn(*args, **kwargs)
        except BaseException as exc:
            session.end(token, exc)
            raise
        session.end(token, None)
        return result

    return wrapper


def _direct(fn: Callable[..., Any], session: Any) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)
        session  # noqa: B018 -- unreachable; keeps the free variables those of _through

    return wrapper


def _labelled(fn: Callable[..., Any], session: Any) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if profiler_enabled():
            with _session.torch_module().autograd.profiler.record_function(session.label):
                return fn(*args, **kwargs)
        return fn(*args, **kwargs)

    return wrapper


def _watching(fn: Callable[..., Any], session: Any) -> Callable[..., Any]:
    """After the first window of ``@autoprof(watch=...)``: the call's start on the host
    clock to the watcher; a call that begins (or falls in) a triggered window is recorded."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        watcher = session.watcher
        if watcher.window is None and not watcher.tick(_clock()):
            return fn(*args, **kwargs)
        return window_call(watcher, fn, args, kwargs)

    return wrapper


_native_id = threading.get_native_id
_clock = time.perf_counter_ns
# Once a session is done its wrapper's code object is swapped for one of these: the same
# closure cells (fn, session); _DIRECT_CODE's body is exactly a plain functools.wraps
# wrapper's, _LABELLED_CODE's adds the label while another session's profiler records.
_DIRECT_CODE = _direct(len, len).__code__
_LABELLED_CODE = _labelled(len, len).__code__
_WATCH_CODE = _watching(len, len).__code__
_FREEVARS = _through(len, len).__code__.co_freevars
if not (_DIRECT_CODE.co_freevars == _LABELLED_CODE.co_freevars == _FREEVARS
        == _WATCH_CODE.co_freevars):  # pragma: no cover
    raise ImportError("autoprof: the fast-path wrappers must share their free variables")

_NOT_PLAIN = (
    (inspect.isasyncgenfunction, "an async generator function"),
    (inspect.iscoroutinefunction, "an async def (coroutine) function"),
    (inspect.isgeneratorfunction, "a generator function"),
)


def _refuse_lazy(fn: Callable[..., Any]) -> None:
    for test, what in _NOT_PLAIN:
        if test(fn):
            name = getattr(fn, "__qualname__", repr(fn))
            raise TypeError(
                f"autoprof cannot profile {name}: it is {what}, so a call only creates the "
                "generator or coroutine and none of its work would be in the profile. "
                "Decorate the plain function that drives it, or put "
                "`with autoprof.region(name):` around one iteration or one await"
            )


def decorate(fn: F, options: Options) -> F:
    """Wrap ``fn`` in a session; with autoprof disabled, return ``fn`` itself."""
    _refuse_lazy(fn)
    if not options.enabled or not env_enabled():
        return fn
    skip_autoprof_in_dynamo()  # torch.compile(autoprof(f)) compiles f, not autoprof
    own_name, qualname = _callable_name(fn)
    source_file, source_line = _source_of(fn)
    name = str(options.name or own_name)
    session = _session.Session(name, options, qualname, source_file, source_line)
    wrapper: Any = functools.wraps(fn)(_through(fn, session))

    def fast_path() -> None:
        if session.covered:  # nested in another session's run: label whenever one records
            wrapper.__code__ = _LABELLED_CODE
        elif options.watch is not None and start_watching(session) is not None:
            wrapper.__code__ = _WATCH_CODE
        else:  # the schedule is over: straight to the function
            wrapper.__code__ = _DIRECT_CODE

    session.on_done = fast_path
    wrapper.autoprof_session = session
    return cast(F, wrapper)


# -- regions ------------------------------------------------------------------------------


class _NullRegion:
    """What a region is when nothing is recording: enter and exit do nothing."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    # three named parameters, not *exc: CPython calls this ~35% faster
    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        return None


class _Label:
    """Only the ``record_function`` label (another profiler is recording)."""

    __slots__ = ("_rf",)

    def __init__(self, name: str) -> None:
        self._rf = _session.torch_module().autograd.profiler.record_function(
            kineto_label(name))

    def __enter__(self) -> None:
        self._rf.__enter__()

    def __exit__(self, *exc: object) -> None:
        self._rf.__exit__(None, None, None)


class _RegionStep:
    """One entry of a region whose session is not done: a warm-up call or a profiler step."""

    __slots__ = ("_session", "_token")

    def __init__(self, session: _session.Session) -> None:
        self._session = session

    def __enter__(self) -> None:
        self._token = self._session.begin()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._session.end(self._token, exc)


def profiler_enabled() -> bool:
    check = _enabled_check
    if check is None:
        check = _cache_enabled_check()
    return check()


_NULL = _NullRegion()
_OFF = object()  # registry marker: regions disabled by AUTOPROF=0 / enabled=False
_regions: dict[str, Any] = {}
_regions_lock = threading.Lock()
_enabled_check: Callable[[], bool] | None = None
# name -> True once its session is done (label only while a profiler records), False when
# disabled: the one dict lookup a finished region costs before torch's "profiler on?" check.
# settle() binds _enabled_check before it stores True, so region() calls it unchecked.
_settled: dict[str, bool] = {}


def region(name: str, **options: Any) -> Any:
    """``with autoprof.region("forward"):`` -- each entry is one profiler step of the session
    called ``name`` (options as for ``@autoprof``, taken from the first entry); inside another
    recording session it only adds its label."""
    settled = _settled.get(name)
    if settled is not None:
        if settled and _enabled_check():  # type: ignore[misc]  # bound before any True
            return _Label(name)
        return _NULL
    session = _regions.get(name)
    if session is None:
        session = _new_region(name, options)
    if session is _OFF:
        return _NULL
    if session.__class__ is WatchedRegion:  # past its first window, watched: times entries
        return session
    if session.done:
        check = _enabled_check
        if check is None:
            check = _cache_enabled_check()
        return _Label(name) if check() else _NULL
    return _RegionStep(session)


def _new_region(name: str, options: dict[str, Any]) -> Any:
    opts = make_options(name=name, **options)
    with _regions_lock:
        existing = _regions.get(name)
        if existing is not None:
            return existing
        if not opts.enabled or not env_enabled():
            _regions[name] = _OFF
            _settled[name] = False
            return _OFF
        skip_autoprof_in_dynamo()
        caller = sys._getframe(2)
        session = _session.Session(
            name, opts, f"region:{name}", caller.f_code.co_filename, caller.f_lineno
        )

        def settle() -> None:
            _cache_enabled_check()  # torch is imported by now: bind its check once
            watcher = start_watching(session) if opts.watch is not None else None
            if watcher is not None:
                _regions[name] = WatchedRegion(watcher)  # each entry timed
                return
            _settled[name] = True

        session.on_done = settle
        session.times_after_window = False  # settled at once: the one-lookup fast path
        _regions[name] = session
        return session


def _after_fork_in_child() -> None:
    global _regions_lock
    _regions_lock = threading.Lock()  # another parent thread may have held it at fork


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _cache_enabled_check() -> Callable[[], bool]:
    global _enabled_check
    _enabled_check = _session.torch_module().autograd._profiler_enabled
    return _enabled_check


def flush(wait: bool = True) -> None:
    """End every run still recording (status ``partial``) and wait until all files are
    written. Runs at interpreter exit too."""
    _session.flush_all(wait)
