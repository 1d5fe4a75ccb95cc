"""A package's public names resolved from their modules on first use (PEP 562), so importing
the package (or one module inside it) does not import everything it offers."""

from __future__ import annotations

import importlib
import types
from collections.abc import Callable
from typing import Any


def lazy_names(package: str, names: dict[str, str], namespace: dict[str, Any],
               public: list[str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The package's ``__getattr__`` and ``__dir__``: ``names`` maps each name to the
    module that defines it; a name found is kept in ``namespace`` (the package's globals),
    so later lookups skip ``__getattr__``."""

    def __getattr__(name: str) -> Any:
        module_name = names.get(name)
        if module_name is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module_name), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(public))

    return __getattr__, __dir__


class CallablePackage(types.ModuleType):
    """The ``autoprof`` package object, callable as its decorator: after ``import autoprof``,
    ``@autoprof`` and ``@autoprof(name=...)`` mean ``autoprof.autoprof`` (the README's
    spelling), as with ``from autoprof import autoprof``."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.autoprof(*args, **kwargs)
