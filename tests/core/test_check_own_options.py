"""``autoprof.check(fn, x, out_dir=...)``: autoprof's own option names given as keywords are
refused with the decorator spelling before ``fn`` is called or any folder is written; a
keyword that ``fn`` names as its own parameter still reaches it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from autoprof import autoprof


@pytest.mark.parametrize("option", ["out_dir", "name", "schedule", "warmup", "warmup_calls",
                                    "activities", "profile_memory"])
def test_an_option_name_is_refused_with_the_decorator_spelling(option, tmp_path, traces_root):
    calls: list[Any] = []

    def step(x: int) -> int:
        calls.append(x)
        return x

    with pytest.raises(TypeError) as info:
        autoprof.check(step, 1, **{option: str(tmp_path / "out")})
    line = str(info.value)
    assert "\n" not in line
    assert f"autoprof.check(autoprof({option}=...)(step), *args)" in line
    assert "nothing was recorded" in line
    assert calls == []  # the user's function never ran
    assert not (tmp_path / "out").exists()
    assert not any(Path(traces_root).rglob("manifest.json"))  # no failed run anywhere


def test_the_refusal_holds_for_a_decorated_function_and_with_autoprof_off(monkeypatch):
    monkeypatch.setenv("AUTOPROF", "0")

    @autoprof(name="decorated")
    def step(x: int, **extra: Any) -> int:  # **extra does not make out_dir its own
        return x

    with pytest.raises(TypeError, match=r"out_dir=\.\.\..*\(step\)"):
        autoprof.check(step, 1, out_dir="elsewhere")


def test_a_keyword_the_function_names_itself_reaches_it(monkeypatch):
    monkeypatch.setenv("AUTOPROF", "0")
    seen: list[str] = []

    def step(x: int, name: str = "") -> int:
        seen.append(name)
        return x

    run = autoprof.check(step, 1, name="mine")
    assert not run and seen and set(seen) == {"mine"}
