"""The README starts with the two set-up commands, and CI runs the README's test command."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _first_block() -> list[str]:
    text = (REPO / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert block, "README.md has no bash block"
    assert text.index("```bash") < 20 + text.index("\n"), "the command block must come first"
    return [line.split("#")[0].strip() for line in block.group(1).strip().splitlines()]


def test_readme_starts_with_two_commands_that_exist():
    commands = _first_block()
    assert len(commands) == 2, commands
    for command in commands:
        script = command.split()[-1]
        assert (REPO / script).is_file(), f"README command names a missing script: {script}"


def test_ci_runs_the_readme_test_command():
    test_command = _first_block()[1]
    ci = (REPO / ".ci" / "run").read_text()
    assert test_command in ci, f"{test_command!r} is not called by .ci/run"
