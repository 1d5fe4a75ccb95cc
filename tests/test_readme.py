"""The README opens with what autoprof does, `pip install`, then the two set-up commands;
CI runs the README's test command. (tests/core/test_readme_snippet.py runs its first Python
snippet.)"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TEXT = (REPO / "README.md").read_text()
BLOCKS = [(m.start(), m.group(1)) for m in re.finditer(r"```bash\n(.*?)```", TEXT, re.S)]


def _commands(block: str) -> list[str]:
    return [line.split("#")[0].strip() for line in block.strip().splitlines()]


def _setup_commands() -> list[str]:
    setup = [b for _, b in BLOCKS if "scripts/" in b]
    assert setup, "README.md has no block with the set-up scripts"
    return _commands(setup[0])


def test_readme_opens_with_what_autoprof_does_then_pip_install():
    assert BLOCKS, "README.md has no bash block"
    first_at, first = BLOCKS[0]
    intro = TEXT[TEXT.index("\n"):first_at]
    assert "@autoprof" in intro and "slow" in intro
    assert len(intro.split()) < 80, "the opening says what autoprof does in a few lines"
    assert _commands(first)[0].startswith("pip install"), first


def test_readme_set_up_block_holds_two_commands_that_exist():
    commands = _setup_commands()
    assert len(commands) == 2, commands
    for command in commands:
        script = command.split()[-1]
        assert (REPO / script).is_file(), f"README command names a missing script: {script}"


def test_ci_runs_the_readme_test_command():
    test_command = _setup_commands()[1]
    ci = (REPO / ".ci" / "run").read_text()
    assert test_command in ci, f"{test_command!r} is not called by .ci/run"


def test_the_quick_tier_is_documented_and_touches_every_layer():
    """`bash scripts/test.sh --quick` is in the README, the script knows it, and its files
    (tests/support/tiers.py) exist and cover every layer."""
    from support.tiers import QUICK

    assert any("bash scripts/test.sh --quick" in _commands(b) for _, b in BLOCKS)
    assert '"--quick"' in (REPO / "scripts" / "test.sh").read_text()
    assert {"record", "load", "analyse", "report", "viewer", "cli"} <= set(QUICK)
    for layer, files in QUICK.items():
        assert files, f"the quick tier has no tests of the {layer} layer"
        missing = [f for f in files if not (REPO / f).is_file()]
        assert not missing, f"the quick tier names missing files: {missing}"


def test_the_timed_files_exist_and_the_script_runs_them_alone():
    """The files `bash scripts/test.sh` runs alone after the workers (tests/support/tiers.py)
    exist, so the list cannot quietly name nothing."""
    from support.tiers import FIRST_FILES, SERIAL_FILES

    assert SERIAL_FILES and '-m serial' in (REPO / "scripts" / "test.sh").read_text()
    missing = sorted(f for f in {*SERIAL_FILES, *FIRST_FILES} if not (REPO / f).is_file())
    assert not missing, f"the serial files name missing files: {missing}"
