"""``torch.compile(autoprof(f))``: Dynamo skips autoprof's own frames and compiles ``f``.

Without this, Dynamo traces autoprof's wrapper and session code (locks, thread ids, the
profiler's steps): it prints warnings about autoprof's internals and breaks the graph at every
step. Dynamo's skip list (``torch._dynamo.trace_rules.add``, the list that keeps it out of
``torch.nn.Module.__call__`` while it compiles ``forward``) takes autoprof's package folder, so
autoprof's frames run as written and the user's function called from them is compiled.

Importing Dynamo costs seconds, so autoprof never imports it: when Dynamo is already loaded
the folder is added at once, otherwise on the import of ``torch._dynamo.trace_rules``.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
from types import ModuleType
from typing import Any

_RULES = "torch._dynamo.trace_rules"
_lock = threading.Lock()
_done = False


def skip_autoprof_in_dynamo() -> None:
    """Make Dynamo skip autoprof's frames, now or once Dynamo is imported. Never raises."""
    global _done
    with _lock:
        if _done:
            return
        _done = True
        rules = sys.modules.get(_RULES)
        if rules is not None:
            _add(rules)
        else:
            sys.meta_path.insert(0, _WhenImported())


def _add(rules: ModuleType) -> None:
    try:
        rules.add("autoprof")
    except Exception:  # pragma: no cover - a torch without this hook: torch's own warnings
        pass


class _WhenImported(importlib.abc.MetaPathFinder):
    """Finds nothing itself: on the import of Dynamo's rules it runs the real loader, then
    adds autoprof, then leaves ``sys.meta_path``."""

    used = False

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != _RULES or self.used:
            return None
        self.used = True  # sys.meta_path is being iterated: leave it once the module ran
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        loader = getattr(spec, "loader", None)
        if spec is None or loader is None or not hasattr(loader, "exec_module"):
            return spec  # pragma: no cover - an unusual install: torch's own warnings
        original = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            try:
                original(module)
                _add(module)
            finally:
                if self in sys.meta_path:
                    sys.meta_path.remove(self)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec
