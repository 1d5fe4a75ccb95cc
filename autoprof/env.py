"""Every ``AUTOPROF_*`` environment variable, read in one place with one set of rules.

A flag is off for ``0``, ``false``, ``off`` or ``no`` in any case, and on for anything else;
a number that does not parse or is not positive falls back to its default. docs/environment.md
has the table of the variables below. No torch, no pandas: the recording process imports it.
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

FALSE_WORDS = frozenset({"0", "false", "off", "no"})
DEFAULT_OUT_DIR = "traces"
DEFAULT_CACHE_MIN_BYTES = 4 * 1024**2
DEFAULT_MAX_TRACE_BYTES = 4 * 1024**3
DEFAULT_MAX_GZIP_RATIO = 200.0  # real traces compress 5-30 times; a gzip bomb ~1,000
DEFAULT_DIST_TIMEOUT_S = 30.0
DEFAULT_FINISH_TIMEOUT_S = 30.0
DEFAULT_FINISH_YIELD_S = 30.0


def flag(name: str, default: bool = True) -> bool:
    """``name`` as a switch: unset or blank gives ``default``."""
    text = os.environ.get(name, "").strip().lower()
    if not text:
        return default
    return text not in FALSE_WORDS


def positive_int(name: str, default: int) -> int:
    return _int(name, default, minimum=1)


def non_negative_int(name: str, default: int) -> int:
    return _int(name, default, minimum=0)


def _int(name: str, default: int, minimum: int) -> int:
    text = os.environ.get(name, "").strip()
    try:
        value = int(text)
    except ValueError:
        return default
    return value if value >= minimum else default


def positive_float(name: str, default: float) -> float:
    return _float(name, default, zero_ok=False)


def non_negative_float(name: str, default: float) -> float:
    return _float(name, default, zero_ok=True)


def _float(name: str, default: float, zero_ok: bool) -> float:
    text = os.environ.get(name, "").strip()
    try:
        value = float(text)
    except ValueError:
        return default
    usable = (value >= 0 if zero_ok else value > 0) and value != float("inf")
    return value if usable else default


def out_dir(default: str = DEFAULT_OUT_DIR) -> Path:
    """``AUTOPROF_DIR``, the traces root for recording and for the viewer, else ``traces``."""
    text = os.environ.get("AUTOPROF_DIR", "").strip()
    return Path(text or default)


def enabled() -> bool:
    """``AUTOPROF``: off makes ``@autoprof`` return the function itself and regions no-ops."""
    return flag("AUTOPROF")


def cache_enabled() -> bool:
    """``AUTOPROF_CACHE``: off stops reading and writing the caches beside traces."""
    return flag("AUTOPROF_CACHE")


def cache_dir() -> Path:
    """``AUTOPROF_CACHE_DIR``, where caches of traces read by URL go (nothing is written
    beside a remote trace), else ``$XDG_CACHE_HOME/autoprof``, else ``~/.cache/autoprof``."""
    text = os.environ.get("AUTOPROF_CACHE_DIR", "").strip()
    if text:
        return Path(text)
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(xdg) if xdg else Path.home() / ".cache") / "autoprof"


def mmap_enabled() -> bool:
    """``AUTOPROF_MMAP``: on maps plain traces instead of reading them into memory (less
    memory, a little faster; off by default: a mapped file another process cuts short ends
    the process with SIGBUS)."""
    return flag("AUTOPROF_MMAP", default=False)


def default_off(name: str) -> None:
    """Switch ``name`` off for this process (and the processes it starts) unless the user
    set it: the viewer maps no trace (``AUTOPROF_MMAP``), the MCP server writes no cache
    beside the traces it serves (``AUTOPROF_CACHE``)."""
    os.environ.setdefault(name, "0")


def streamlit_server_address() -> str:
    """``STREAMLIT_SERVER_ADDRESS`` (streamlit's own variable), stripped; "" when unset."""
    return os.environ.get("STREAMLIT_SERVER_ADDRESS", "").strip()


def decode_helper_enabled() -> bool:
    """``AUTOPROF_DECODE_HELPER``: off decodes every trace in the process that loads it (on:
    a large trace's chunks are shared with a second process, loader/helper.py)."""
    return flag("AUTOPROF_DECODE_HELPER", default=True)


def huge_pages_kept() -> bool:
    """``AUTOPROF_HUGE_PAGES``: on leaves numpy's advice for huge pages as it is while a trace
    loads (off: the load turns it off, loader/pages.py)."""
    return flag("AUTOPROF_HUGE_PAGES", default=False)


def view_remote() -> bool:
    """``AUTOPROF_VIEW_REMOTE``: on lets the viewer serve an address other than this
    machine's loopback (``autoprof view --address ADDR`` sets it for its server). Off, a
    viewer told by ``STREAMLIT_SERVER_ADDRESS`` or ``--server.address`` to listen elsewhere
    answers only a refusal: a setting meant for another Streamlit app is not consent."""
    return flag("AUTOPROF_VIEW_REMOTE", default=False)


def is_loopback(address: str) -> bool:
    """'127.0.0.1', '127.0.1.1', '::1', '[::1]', 'localhost', a unix socket: this machine
    only. '', '0.0.0.0', '::', a LAN address or any other name: not."""
    name = address.strip().lower()
    if name.startswith("unix://") or name in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(name.strip("[]")).is_loopback
    except ValueError:
        return False


def cache_min_bytes() -> int:
    """``AUTOPROF_CACHE_MIN_BYTES``: traces smaller than this get no cache (0: all do)."""
    return non_negative_int("AUTOPROF_CACHE_MIN_BYTES", DEFAULT_CACHE_MIN_BYTES)


def max_trace_bytes() -> int:
    return positive_int("AUTOPROF_MAX_TRACE_BYTES", DEFAULT_MAX_TRACE_BYTES)


def max_gzip_ratio() -> float:
    """How many times its compressed size a gzip file may expand (past a floor)."""
    return positive_float("AUTOPROF_MAX_GZIP_RATIO", DEFAULT_MAX_GZIP_RATIO)


def dist_timeout_s() -> float:
    """How long a rank waits for rank 0's run id (through the c10d store)."""
    return positive_float("AUTOPROF_DIST_TIMEOUT_S", DEFAULT_DIST_TIMEOUT_S)


def dist_finish_timeout_s() -> float:
    """How long rank 0's finisher waits for the other ranks' manifests (same variable)."""
    return dist_timeout_s()


def finish_timeout_s() -> float:
    """How long ``autoprof.flush()`` and interpreter exit wait for a run's finisher."""
    return positive_float("AUTOPROF_FINISH_TIMEOUT_S", DEFAULT_FINISH_TIMEOUT_S)


def peak_tflops() -> float | None:
    """``AUTOPROF_PEAK_TFLOPS``: the device's peak TFLOP/s for the efficiency analysis (every
    dtype), when the peaks table lacks the device; None when unset or unreadable."""
    return positive_float("AUTOPROF_PEAK_TFLOPS", 0.0) or None


def peak_gbps() -> float | None:
    """``AUTOPROF_PEAK_GBPS``: the device's peak memory bandwidth in GB/s; None when unset."""
    return positive_float("AUTOPROF_PEAK_GBPS", 0.0) or None


def lock_wait_s(default_s: float) -> float:
    """``AUTOPROF_LOCK_WAIT_S``: how long to wait for a run folder's lock (the caller's
    default differs for readers and writers)."""
    return positive_float("AUTOPROF_LOCK_WAIT_S", default_s)


def finish_yield_s() -> float:
    """``AUTOPROF_FINISH_YIELD_S``: how long the finisher waits for the program to leave a
    core idle before it works anyway (0: it never waits; record/finisher/cpu_gate.py)."""
    return non_negative_float("AUTOPROF_FINISH_YIELD_S", DEFAULT_FINISH_YIELD_S)
