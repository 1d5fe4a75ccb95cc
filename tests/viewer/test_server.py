"""The server a plain `streamlit run viewer/app.py` (from the repository root) starts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from support.ports import free_port
from support.viewer import APP, REPO

CONFIG = REPO / ".streamlit" / "config.toml"


def test_config_defaults_are_local_and_private():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    cfg = tomllib.loads(CONFIG.read_text())
    assert cfg["server"]["address"] == "127.0.0.1"
    assert cfg["server"]["headless"] is True
    assert cfg["browser"]["gatherUsageStats"] is False


def _listening(port: int) -> set[str]:
    """Local addresses (hex, as in /proc/net/tcp*) listening on `port`."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        path = Path(table)
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            addr, hexport = fields[1].rsplit(":", 1)
            if int(hexport, 16) == port and fields[3] == "0A":  # 0A = LISTEN
                found.add(addr)
    return found


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs Linux /proc/net/tcp")
def test_plain_streamlit_run_binds_to_localhost_only(tmp_path):
    port = free_port()
    env = dict(os.environ, AUTOPROF_DIR=str(tmp_path))
    log = (tmp_path / "server.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", APP, "--server.port", str(port)],
        cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, (tmp_path / "server.log").read_text()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health",
                                            timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, (tmp_path / "server.log").read_text()
            time.sleep(0.2)
        addrs = _listening(port)
        assert addrs == {"0100007F"}, addrs  # 127.0.0.1 only, no 0.0.0.0 / ::
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
        log.close()
