"""A free localhost TCP port for tests that start servers or process groups.

Imported as ``from support.ports import free_port`` (pyproject puts tests/ on pytest's path)."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port nothing listens on right now (the OS picks it; closed again before returning)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
