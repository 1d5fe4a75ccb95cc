"""The load runs with numpy's huge-page advice off, and puts it back after."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from autoprof.analysis.loader import load as load_module
from autoprof.analysis.loader import pages
from autoprof.analysis.loader.load import load_data

pytestmark = pytest.mark.skipif(pages.huge_pages_advised() is None,
                                reason="this numpy has no huge-page switch")


@pytest.fixture
def advice():  # type: ignore[no-untyped-def]
    """numpy's advice as it was before the test, put back after it."""
    assert pages._SET is not None
    before = pages._SET(True)
    yield
    pages._SET(before)


@pytest.mark.usefixtures("advice")
@pytest.mark.parametrize("before", [True, False])
def test_off_inside_and_as_before_after(before: bool) -> None:
    assert pages._SET is not None
    pages._SET(before)
    with pages.small_pages():
        assert pages.huge_pages_advised() is False
        with pages.small_pages():  # nested: the inner exit leaves it off
            pass
        assert pages.huge_pages_advised() is False
    assert pages.huge_pages_advised() is before


@pytest.mark.usefixtures("advice")
def test_put_back_when_the_load_raises() -> None:
    with pytest.raises(RuntimeError), pages.small_pages():
        raise RuntimeError("a load that fails")
    assert pages.huge_pages_advised() is True


@pytest.mark.usefixtures("advice")
def test_left_alone_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOPROF_HUGE_PAGES", "1")
    with pages.small_pages():
        assert pages.huge_pages_advised() is True


@pytest.mark.usefixtures("advice")
def test_the_events_table_is_built_without_the_advice(
        trace_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool | None] = []
    build = load_module.build_events

    def spy(*args: object, **kwargs: object) -> pd.DataFrame:
        seen.append(pages.huge_pages_advised())
        return build(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(load_module, "build_events", spy)
    data = load_data(trace_copy)
    assert len(data.events) and seen == [False]
    assert pages.huge_pages_advised() is True
