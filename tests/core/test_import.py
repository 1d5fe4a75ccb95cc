"""Importing autoprof from a folder that holds a clone named ``autoprof``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_a_clone_named_autoprof_beside_the_script_is_a_clear_import_error(tmp_path):
    clone = tmp_path / "autoprof"  # a clone: the package folder inside, no __init__.py here
    clone.mkdir()
    (clone / "autoprof").symlink_to(REPO / "autoprof", target_is_directory=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    program = "from autoprof import autoprof\n@autoprof\ndef f():\n    return 1\nprint(f())\n"
    done = subprocess.run([sys.executable, "-c", program], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: autoprof was imported as 'autoprof.autoprof'")
    assert f"the folder {clone} " in last and "run from another folder" in last
