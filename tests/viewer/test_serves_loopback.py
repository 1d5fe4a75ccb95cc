"""The viewer serves this machine only however it is started: an address that reaches other
machines (STREAMLIT_SERVER_ADDRESS left for another app, --server.address) without autoprof's
own switch turns every script run into a one-line refusal that names the fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit import config
from streamlit.testing.v1 import AppTest
from support.apptest import markdown_texts
from support.viewer import APP, REPO

from autoprof import env
from autoprof.cli.commands import view_command
from autoprof.viewer._guard import unbound_refusal

CPU_EXAMPLES = REPO / "traces" / "examples"


@pytest.fixture
def listening_on(monkeypatch: pytest.MonkeyPatch):
    """Set server.address as `STREAMLIT_SERVER_ADDRESS=...` would, and put it back."""
    before = config.get_option("server.address")

    def set_address(address: str) -> None:
        monkeypatch.setenv("STREAMLIT_SERVER_ADDRESS", address)
        config.set_option("server.address", address)

    yield set_address
    config.set_option("server.address", before)


def _app(monkeypatch: pytest.MonkeyPatch) -> AppTest:
    monkeypatch.setenv("AUTOPROF_DIR", str(CPU_EXAMPLES))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.parametrize("address", ["0.0.0.0", "::", "192.168.1.5", "viewer.lan"])
def test_an_address_from_the_environment_is_refused_without_consent(
        listening_on, monkeypatch, capsys, address):
    monkeypatch.delenv("AUTOPROF_VIEW_REMOTE", raising=False)
    listening_on(address)
    at = _app(monkeypatch)
    shown = " ".join(markdown_texts(at))
    assert "Refused" in shown and "STREAMLIT_SERVER_ADDRESS" in shown, shown
    assert "AUTOPROF_VIEW_REMOTE=1" in shown
    assert not at.sidebar.selectbox and not at.get("vega_lite_chart")  # no run is offered
    err = capsys.readouterr().err
    assert err.count("autoprof viewer: Refused") == 1 and address in err


def test_remote_serving_asked_for_by_autoprofs_switch_serves(listening_on, monkeypatch):
    monkeypatch.setenv("AUTOPROF_VIEW_REMOTE", "1")
    listening_on("0.0.0.0")
    shown = " ".join(markdown_texts(_app(monkeypatch)))
    assert "Refused" not in shown


@pytest.mark.parametrize("address", ["127.0.0.1", "localhost", "::1", "127.0.1.1"])
def test_a_loopback_address_is_served(listening_on, monkeypatch, address):
    monkeypatch.delenv("AUTOPROF_VIEW_REMOTE", raising=False)
    listening_on(address)
    shown = " ".join(markdown_texts(_app(monkeypatch)))
    assert "Refused" not in shown


@pytest.mark.parametrize(("address", "loopback"), [
    ("127.0.0.1", True), ("[::1]", True), ("LOCALHOST", True), ("unix://x.sock", True),
    ("0.0.0.0", False), ("::", False), ("", False), ("10.0.0.5", False), ("example.com", False),
])
def test_loopback_is_this_machine_only(address, loopback):
    assert env.is_loopback(address) is loopback


def test_the_refusal_is_one_line_naming_the_fix(monkeypatch):
    monkeypatch.setenv("STREAMLIT_SERVER_ADDRESS", "0.0.0.0")
    line = unbound_refusal({}, "0.0.0.0")  # refused even with no HTTP request to look at
    assert line and "\n" not in line
    assert "--server.address 127.0.0.1" in line and "AUTOPROF_VIEW_REMOTE=1" in line


def test_autoprof_view_consents_only_for_the_address_it_was_given(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOPROF_VIEW_REMOTE", "1")  # inherited: not this command's consent
    _, local = view_command(Path("app.py"), tmp_path, "127.0.0.1", None)
    assert "AUTOPROF_VIEW_REMOTE" not in local
    _, remote = view_command(Path("app.py"), tmp_path, "0.0.0.0", None)
    assert remote["AUTOPROF_VIEW_REMOTE"] == "1"
