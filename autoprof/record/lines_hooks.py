"""The source-lines step's hooks inside the user's call: each module call labelled with its
attribute path (:class:`ModulePaths`), and each torch.compile'd call run as in the measured
steps (:class:`CompiledRegions`). :mod:`autoprof.record.lines` starts and stops them."""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Callable
from typing import Any

MODULE_LABEL = "autoprof::module "


def quietly(call: Callable[..., Any], *args: Any) -> None:
    """``call(*args)``; a failure is dropped (the lines step's bookkeeping inside the user's
    call must never raise there)."""
    try:
        call(*args)
    except Exception:
        pass


class ModulePaths:
    """Global forward hooks that label each module call with its attribute path."""

    def __init__(self, torch: Any) -> None:
        self._torch = torch
        self._stack: list[tuple[Any, str, Any]] = []
        self._names: dict[tuple[int, int], str] = {}
        self._removed = False
        self._handles = self._register()

    def _register(self) -> list[Any]:
        mod = self._torch.nn.modules.module
        return [mod.register_module_forward_pre_hook(self._pre),
                mod.register_module_forward_hook(self._post, always_call=True)]

    def suspend(self) -> None:
        """Out of torch's global hook dicts (the labels open now stay open)."""
        handles, self._handles = self._handles, []
        for handle in handles:
            quietly(handle.remove)

    def resume(self) -> None:
        if not self._handles and not self._removed:
            self._handles = self._register()

    def _path(self, module: Any) -> str:
        """The caller module's path and the name under it (a child, or deeper: a block of a
        ModuleList); the class name for a module called from no other."""
        if not self._stack:
            return type(module).__name__
        parent, parent_path, _ = self._stack[-1]
        key = (id(parent), id(module))
        name = self._names.get(key)
        if name is None:
            name = next((n for n, sub in parent.named_modules() if sub is module and n), "")
            self._names[key] = name
        return f"{parent_path}.{name}" if name else type(module).__name__

    def _pre(self, module: Any, args: Any) -> None:
        try:  # a hook that raised would fail the user's forward: a failure labels nothing
            path = self._path(module)
            rf = self._torch.autograd.profiler.record_function(MODULE_LABEL + path)
            rf.__enter__()
        except Exception:
            return
        self._stack.append((module, path, rf))

    def _post(self, module: Any, args: Any, output: Any) -> None:
        if not any(top is module for top, _, _ in self._stack):
            return  # its pre hook labelled nothing
        while self._stack:  # a module whose forward raised left no post call: unwind to it
            top, _, rf = self._stack.pop()
            quietly(rf.__exit__, None, None, None)
            if top is module:
                return

    def remove(self) -> None:
        self._removed = True
        self.suspend()
        while self._stack:
            quietly(self._stack.pop()[2].__exit__, None, None, None)


def optimize_contexts() -> list[Any]:
    """Every dynamo context of a torch.compile'd module or function alive in the process
    (none when dynamo was never imported)."""
    eval_frame = sys.modules.get("torch._dynamo.eval_frame")
    cls = getattr(eval_frame, "OptimizeContext", None)
    if not isinstance(cls, type):
        return []
    return [obj for obj in gc.get_objects() if issubclass(type(obj), cls)]


class CompiledRegions:
    """Each call of a torch.compile'd module or function runs in the lines step as in the
    measured steps: dynamo guards on the torch-function mode stack and on the global module
    hooks, so with the label mode and the hooks on it would compile the code again, break
    its graph at each label and run other ops than the measured steps. An enter hook of
    every compiled function's dynamo context (``enter_exit_hooks``: run by dynamo around
    each call) takes the mode off the stack and the hooks out of torch's dicts for the
    outermost compiled call of a thread, and labels the call with the line that made it;
    the ops inside take that line (inductor's provenance may name finer lines of kernels).
    """

    def __init__(self, torch: Any, where: Callable[[], str | None],
                 label: Callable[[str | None], Any], hooks: ModulePaths,
                 contexts: list[Any]) -> None:
        self._torch = torch
        self._where = where
        self._label = label
        self.mode: Any = None  # the label mode, once built (nothing here refers to the step)
        self._hooks = hooks
        self._local = threading.local()
        self._lock = threading.Lock()
        self._threads_inside = 0  # the hooks are global: out while any thread is inside
        self._lists: list[list[Any]] = []
        for context in contexts:
            enters = getattr(context, "enter_exit_hooks", None)
            if isinstance(enters, list):
                enters.append(self.enter)
                self._lists.append(enters)

    def inside(self) -> bool:
        """Is this thread inside a compiled call?"""
        return bool(getattr(self._local, "depth", 0))

    def outside(self, where: Callable[[], str | None]) -> Callable[[], str | None]:
        """``where`` outside compiled calls, None inside them (their call's label holds)."""

        def where_outside() -> str | None:
            return None if self.inside() else where()

        return where_outside

    def enter(self) -> Callable[[], None]:
        depth = getattr(self._local, "depth", 0)
        self._local.depth = depth + 1
        if depth:
            return self._leave_nested
        popped = self._pop_mode()
        self._hooks_out()
        try:
            rf = self._label(self._where())
        except Exception:
            rf = None

        def leave() -> None:
            self._local.depth = 0
            if rf is not None:
                quietly(rf.__exit__, None, None, None)
            self._hooks_in()
            if popped is not None:
                quietly(self._torch.overrides._push_mode, popped)

        return leave

    def _hooks_out(self) -> None:
        with self._lock:
            self._threads_inside += 1
            if self._threads_inside == 1:
                self._hooks.suspend()

    def _hooks_in(self) -> None:
        with self._lock:
            self._threads_inside -= 1
            if self._threads_inside == 0:
                self._hooks.resume()

    def _leave_nested(self) -> None:
        self._local.depth = max(getattr(self._local, "depth", 1) - 1, 0)

    def _pop_mode(self) -> Any:
        """The label mode, taken off this thread's mode stack when it is on top (else None:
        under another mode the call runs as before, recompiled)."""
        mode = self.mode
        try:
            overrides = self._torch.overrides
            if mode is None or overrides._get_current_function_mode() is not mode:
                return None
            return overrides._pop_mode()
        except Exception:
            return None

    def remove(self) -> None:
        for enters in self._lists:
            enters[:] = [enter for enter in enters if enter != self.enter]
        self._lists = []
        self.mode = None


