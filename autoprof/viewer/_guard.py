"""Who may use the viewer: browsers that reached it by one of this server's own names.

A web page on another site can reach a viewer on 127.0.0.1 through DNS rebinding (its own
name, re-pointed at this machine): the browser then sends that foreign name as `Host` and
`Origin`. Streamlit compares `Origin` with `Host` only, so the check is made here, on every
script run, from the headers of the client's websocket.

The viewer serves this machine only however it was started: a server told to listen on
another address (`--server.address`, or `STREAMLIT_SERVER_ADDRESS` left in the environment
for another app) answers every script run with a refusal naming the fix, unless remote
serving was asked for by autoprof's own switch (`AUTOPROF_VIEW_REMOTE=1`, which
`autoprof view --address ADDR` sets). Only then is a numeric non-loopback `Host` accepted
(rebinding needs a name the attacker controls, so an IP was typed by the user).
"""

from __future__ import annotations

import ipaddress
import sys
from collections.abc import Mapping
from urllib.parse import urlsplit

import streamlit as st
from streamlit import config

from autoprof import env
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


def _ours(name: str, allowed: frozenset[str], remote_ok: bool) -> bool:
    if name in allowed or env.is_loopback(name):
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return remote_ok  # an IP typed by a user on another machine: only when serving them


def refusal(headers: Mapping[str, str], allowed: frozenset[str],
            remote_ok: bool = False) -> str | None:
    """Why these request headers are refused, or None when they are fine.

    No `Host` at all means no HTTP request (Streamlit's AppTest): nothing to check.
    """
    lower = {k.lower(): v for k, v in headers.items()}
    host = lower.get("host")
    if host is not None and not _ours(host_name(host), allowed, remote_ok):
        return f"Host {host!r} is not an address of this viewer"
    origin = lower.get("origin")
    origin_name = (urlsplit(origin).hostname or "").lower() if origin else ""
    if origin and origin != "null" and not _ours(origin_name, allowed, remote_ok):
        return f"Origin {origin!r} is not an address of this viewer"
    return None


START = "`autoprof view DIR`, or `streamlit run viewer/app.py --server.address 127.0.0.1`"
REMOTE = ("to serve other machines on purpose, run `autoprof view --address ADDR DIR` or set "
          "AUTOPROF_VIEW_REMOTE=1")


def private_defaults() -> None:
    """No usage statistics, however Streamlit was started (they are the browser's: off
    here, they are off from the next script run on; the viewer's own .streamlit/config.toml
    has them off from the first)."""
    if config.get_option("browser.gatherUsageStats"):
        config.set_option("browser.gatherUsageStats", False, where_defined="autoprof viewer")


def unbound_refusal(headers: Mapping[str, str], address: str | None,
                    remote_ok: bool = False) -> str | None:
    """The line refusing a server that listens anywhere but this machine's loopback without
    autoprof's own consent (`remote_ok`): no `server.address` (Streamlit's default binds
    every interface), `0.0.0.0`, a LAN address or name. None when it serves loopback only,
    when remote serving was asked for, or when an unset address comes with no HTTP request
    at all (AppTest, which binds nothing)."""
    text = (address or "").strip()
    if remote_ok or (text and env.is_loopback(text)):
        return None
    if not text:
        if not any(k.lower() == "host" for k in headers):
            return None
        return ("Refused: this viewer was started without an address, so it listens on every "
                f"network interface. Restart it with {START}; {REMOTE}.")
    source = (" (from STREAMLIT_SERVER_ADDRESS in the environment)"
              if env.streamlit_server_address() == text else "")
    return (f"Refused: this viewer serves this machine only, but it listens on {text!r}"
            f"{source}. Restart it with {START}; {REMOTE}.")


def enforce() -> None:
    """Stop the script run, showing why, when the server listens beyond this machine
    without autoprof's consent or the client came through a foreign name."""
    private_defaults()
    headers = dict(st.context.headers)
    remote_ok = env.view_remote()
    unbound = unbound_refusal(headers, config.get_option("server.address"), remote_ok)
    if unbound is not None:
        print(f"autoprof viewer: {unbound}", file=sys.stderr)
        st.error(md_escape(unbound))
        st.stop()
    why = refusal(headers, allowed_hosts(), remote_ok)
    if why is None:
        return
    st.error(f"Refused: this viewer only answers on its own address ({md_escape(why)}). Open "
             "it by the address it printed, or start it with `--browser.serverAddress`.")
    st.stop()
