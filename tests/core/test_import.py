"""Importing autoprof from a folder that holds a clone named ``autoprof``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_a_clone_named_autoprof_beside_the_script_is_a_clear_import_error(tmp_path):
    """Where the working folder's namespace package wins (an install whose package is not on
    sys.path as a folder: here the checkout is taken off sys.path), the clone's package is
    imported as 'autoprof.autoprof' and says so."""
    clone = tmp_path / "autoprof"  # a clone: the package folder inside, no __init__.py here
    clone.mkdir()
    (clone / "autoprof").symlink_to(REPO / "autoprof", target_is_directory=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    program = (f"import sys\nsys.path = [p for p in sys.path if p != {str(REPO)!r}]\n"
               "from autoprof import autoprof\n@autoprof\ndef f():\n    return 1\nprint(f())\n")
    done = subprocess.run([sys.executable, "-c", program], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: autoprof was imported as 'autoprof.autoprof'")
    assert f"the folder {clone} " in last and "run from another folder" in last


@pytest.mark.parametrize("clone", [False, True])
def test_a_folder_named_autoprof_in_the_working_folder_does_not_shadow_the_package(
        tmp_path, clone):
    """The set-up's install (scripts/setup.sh, editable in compat mode) puts the checkout on
    sys.path, so a folder named autoprof without __init__.py (a clone, an output folder) in
    the working folder is no namespace package that hides autoprof."""
    (tmp_path / "autoprof").mkdir()
    if clone:
        (tmp_path / "autoprof" / "autoprof").symlink_to(REPO / "autoprof",
                                                        target_is_directory=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    program = "import autoprof\nprint(autoprof.__file__, callable(autoprof))\n"
    done = subprocess.run([sys.executable, "-c", program], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(REPO / "autoprof" / "__init__.py"), "True"]


def test_the_package_itself_is_the_decorator_after_a_plain_import(tmp_path):
    """`import autoprof` then `@autoprof` / `@autoprof(...)`: the README's first sentence."""
    program = (
        "import autoprof\n"
        "@autoprof(name='plain', warmup_calls=0, schedule=dict(wait=0, warmup=0, active=1))\n"
        "def f(x):\n    return x + 1\n"
        "@autoprof\ndef g():\n    return 2\n"
        "print(f(1), g(), f.__name__, g.__name__, callable(autoprof))\n"
        "autoprof.flush()\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO), AUTOPROF_DIR=str(tmp_path / "traces"),
               AUTOPROF_FINISH_YIELD_S="0")
    done = subprocess.run([sys.executable, "-c", program], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "2 2 f g True"
    assert list((tmp_path / "traces" / "plain").glob("*/manifest.json"))  # it recorded


def test_calling_the_package_with_a_non_callable_names_the_spelling():
    import autoprof

    with pytest.raises(TypeError, match=r"use @autoprof or @autoprof\(name=\.\.\., \.\.\.\)"):
        autoprof(3)
