"""Kineto's JSON trace (what torch.profiler's ``export_chrome_trace`` and autoprof write):
``*.json`` or gzip-compressed ``*.json.gz``. Decoding itself lives in ``loader/decode.py``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from autoprof.analysis.loader.decode import TraceFile
    from autoprof.analysis.loader.remote import TracePath

SUFFIXES = (".json", ".json.gz")


class KinetoJson:
    """The Kineto JSON reader (``loader.formats.Reader``)."""

    name = "kineto-json"

    def can_read(self, path: TracePath) -> bool:
        return path.name.lower().endswith(SUFFIXES)

    def read(self, path: TracePath, progress: Callable[[float, str], None] | None = None
             ) -> TraceFile:
        from autoprof.analysis.loader.decode import read_trace

        return read_trace(path, progress=progress)
