"""What every `autoprof` subcommand prints the same way: one error line, one note line, the
exit status for bad input."""

from __future__ import annotations

import sys

from autoprof.units import safe_text

EXIT_BAD_INPUT = 2
PROGRESS_AFTER_S = 0.5  # say nothing for traces that load faster than this
MAX_PATH_CHARS = 300  # a longer path is shortened in the lines autoprof prints


def error_line(path: object, problem: str) -> int:
    """``autoprof: error: <path>: <problem>`` on stderr (the path once); the exit status."""
    print(f"autoprof: error: {safe_text(path, MAX_PATH_CHARS)}: {safe_text(problem)}",
          file=sys.stderr)
    return EXIT_BAD_INPUT


def say(text: str) -> None:
    """One line on stderr, its control characters escaped and its length bounded."""
    print(safe_text(text), file=sys.stderr)
