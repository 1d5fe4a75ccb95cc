"""Who may use the viewer: browsers that reached it by one of this server's own names.

A web page on another site can reach a viewer on 127.0.0.1 through DNS rebinding (its own
name, re-pointed at this machine): the browser then sends that foreign name as `Host` and
`Origin`. Streamlit compares `Origin` with `Host` only, so the check is made here, on every
script run, from the headers of the client's websocket. An IP address typed as such is always
accepted: rebinding needs a name the attacker controls, so a numeric `Host` was typed by the
user (this is how a viewer bound to 0.0.0.0 is reached from another machine).
"""

from __future__ import annotations

import ipaddress
import sys
from collections.abc import Mapping
from urllib.parse import urlsplit

import streamlit as st
from streamlit import config

from autoprof.viewer._text import md_escape

LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})


def allowed_hosts() -> frozenset[str]:
    """Loopback names plus the addresses the server was started with: `--server.address`
    (`autoprof view --address`) and `--browser.serverAddress`."""
    names = set(LOOPBACK)
    for option in ("server.address", "browser.serverAddress"):
        value = str(st.get_option(option) or "").strip().lower()
        if value and value not in ("0.0.0.0", "::"):
            names.add(value.strip("[]"))
    return frozenset(names)


def host_name(value: str) -> str:
    """'Example.COM:8501' -> 'example.com'; '[::1]:8501' -> '::1'."""
    return (urlsplit("//" + value.strip()).hostname or "").lower()


def _ours(name: str, allowed: frozenset[str]) -> bool:
    if name in allowed:
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def refusal(headers: Mapping[str, str], allowed: frozenset[str]) -> str | None:
    """Why these request headers are refused, or None when they are fine.

    No `Host` at all means no HTTP request (Streamlit's AppTest): nothing to check.
    """
    lower = {k.lower(): v for k, v in headers.items()}
    host = lower.get("host")
    if host is not None and not _ours(host_name(host), allowed):
        return f"Host {host!r} is not an address of this viewer"
    origin = lower.get("origin")
    if origin and origin != "null" and not _ours((urlsplit(origin).hostname or "").lower(),
                                                   allowed):
        return f"Origin {origin!r} is not an address of this viewer"
    return None


START = ("`autoprof view DIR`, or `streamlit run viewer/app.py --server.address 127.0.0.1` "
         "(`--server.address 0.0.0.0` serves other machines on purpose)")


def private_defaults() -> None:
    """No usage statistics, however Streamlit was started (they are the browser's: off
    here, they are off from the next script run on; the viewer's own .streamlit/config.toml
    has them off from the first)."""
    if config.get_option("browser.gatherUsageStats"):
        config.set_option("browser.gatherUsageStats", False, where_defined="autoprof viewer")


def unbound_refusal(headers: Mapping[str, str], address: str | None) -> str | None:
    """The line refusing a server that listens on every interface without being told to
    (no `server.address` set: Streamlit's default binds them all); None when it was given
    an address, or when there is no HTTP request at all (AppTest)."""
    if not any(k.lower() == "host" for k in headers) or (address or "").strip():
        return None
    return ("Refused: this viewer was started without an address, so it listens on every "
            f"network interface. Restart it with {START}.")


def enforce() -> None:
    """Stop the script run, showing why, when the server listens on every interface by
    default or the client came through a foreign name."""
    private_defaults()
    headers = dict(st.context.headers)
    unbound = unbound_refusal(headers, config.get_option("server.address"))
    if unbound is not None:
        print(f"autoprof viewer: {unbound}", file=sys.stderr)
        st.error(unbound)
        st.stop()
    why = refusal(headers, allowed_hosts())
    if why is None:
        return
    st.error(f"Refused: this viewer only answers on its own address ({md_escape(why)}). Open "
             "it by the address it printed, or start it with `--browser.serverAddress`.")
    st.stop()
