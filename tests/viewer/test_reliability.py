"""The viewer serves this machine only however it is started, reads nothing outside its folder
however many files a run holds, escapes every text it renders as Markdown, turns a garbled
what-if record into one line, and reads AUTOPROF_DIR by the writer's rule."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from support.apptest import UNESCAPED_MARKUP, markdown_sources, markdown_texts, open_app, visit
from support.ports import free_port
from support.viewer import REPO, write_run

from autoprof import env
from autoprof.viewer._guard import unbound_refusal
from autoprof.viewer._paths import OutsideFolderError, check_tree, resolve_root

EXAMPLES = REPO / "traces" / "examples"
SEED = next(p for p in (EXAMPLES / "seed64x100").iterdir() if p.is_dir())
H200_TRACE = REPO / "tests" / "data" / "h200" / "matmul_add" / "n4096_cold" / "trace.json"
ENTRIES = ("viewer/app.py", "autoprof/viewer/app.py")  # the checkout's and the package's


def _listening(port: int) -> set[str]:
    """Local addresses (hex, as /proc/net/tcp* writes them) listening on `port`."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        path = Path(table)
        for line in path.read_text().splitlines()[1:] if path.exists() else []:
            fields = line.split()
            addr, hexport = fields[1].rsplit(":", 1)
            if int(hexport, 16) == port and fields[3] == "0A":  # 0A = LISTEN
                found.add(addr)
    return found


def _wait_healthy(proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, log.read_text()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health",
                                        timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.2)


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs Linux /proc/net/tcp")
@pytest.mark.parametrize("entry", ENTRIES)
def test_started_from_another_folder_it_listens_on_loopback_only(tmp_path, entry):
    elsewhere = tmp_path / "elsewhere"  # no .streamlit/ here: only the app's own settings
    elsewhere.mkdir()
    port = free_port()
    log = tmp_path / "server.log"
    env_vars = {k: v for k, v in os.environ.items() if not k.startswith("STREAMLIT_")}
    env_vars.update(AUTOPROF_DIR=str(tmp_path), HOME=str(tmp_path))  # no ~/.streamlit either
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(REPO / entry), "--server.port",
             str(port)], cwd=elsewhere, env=env_vars, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True)
        try:
            _wait_healthy(proc, port, log)
            assert _listening(port) == {"0100007F"}, _listening(port)  # 127.0.0.1 only
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=20)
    assert "Collecting usage statistics" not in log.read_text()  # Streamlit's notice


def test_the_apps_own_settings_are_local_and_private():
    tomllib = pytest.importorskip("tomllib")
    for entry in ENTRIES:
        cfg = tomllib.loads((REPO / entry).parent.joinpath(".streamlit/config.toml").read_text())
        assert cfg["server"]["address"] == "127.0.0.1", entry
        assert cfg["browser"]["gatherUsageStats"] is False, entry


def test_a_server_bound_to_every_interface_by_default_is_refused_in_one_line():
    line = unbound_refusal({"Host": "10.0.0.5:8501"}, None)
    assert line and "\n" not in line and "--server.address 127.0.0.1" in line
    assert unbound_refusal({"Host": "10.0.0.5:8501"}, "") == line
    assert unbound_refusal({"Host": "10.0.0.5:8501"}, "0.0.0.0") is not None  # no consent
    assert unbound_refusal({"Host": "10.0.0.5:8501"}, "0.0.0.0", remote_ok=True) is None
    assert unbound_refusal({"Host": "127.0.0.1:8501"}, "127.0.0.1") is None
    assert unbound_refusal({}, None) is None  # no HTTP request at all (AppTest)


def test_usage_statistics_are_switched_off_by_the_app(tmp_path, monkeypatch):
    from streamlit import config

    config.set_option("browser.gatherUsageStats", True)
    try:
        open_app(tmp_path, monkeypatch)
        assert config.get_option("browser.gatherUsageStats") is False
    finally:
        config.set_option("browser.gatherUsageStats", False)


def _padded_run_with_a_link_out(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "traces"
    run = root / "seed" / SEED.name
    shutil.copytree(SEED, run)
    outside = tmp_path / "outside" / "fixed"
    shutil.copytree(SEED, outside)
    for i in range(2100):  # listed before the sub-folder holding the link
        (run / f"pad{i:04d}.txt").write_text("")
    (run / "zz").mkdir()
    os.symlink(outside, run / "zz" / "fixed")
    record = json.loads((run / "whatif.json").read_text())
    record["results"][0]["fixed_run"] = "zz/fixed"
    (run / "whatif.json").write_text(json.dumps(record))
    return root, run


def test_a_link_out_after_2000_entries_is_still_refused(tmp_path):
    root, run = _padded_run_with_a_link_out(tmp_path)
    with pytest.raises(OutsideFolderError, match="outside the traces folder"):
        check_tree(resolve_root(root), run)


def test_the_what_if_page_never_analyses_a_run_outside_the_folder(tmp_path, monkeypatch):
    root, run = _padded_run_with_a_link_out(tmp_path)
    at = visit(open_app(root, monkeypatch), "whatif")
    codes = " ".join(c.value for c in at.code)
    assert "refused" in codes and "outside the traces folder" in codes, codes
    assert not at.dataframe  # nothing of the run (or of the one outside) is shown


def test_the_device_name_is_text_on_the_roofline_page(tmp_path, monkeypatch):
    evil = "**H200** <b>x</b> :red[y] $z$"
    trace = json.loads(H200_TRACE.read_text())
    trace["deviceProperties"][0]["name"] = evil
    write_run(tmp_path / "traces", "matmul_add", "20261130-070100-004096", {"h200": trace},
              device={"name": evil, "properties": {}})
    at = visit(open_app(tmp_path / "traces", monkeypatch), "roofline")
    sources = [*markdown_sources(at), *(m.proto.body for m in at.metric),
               *(m.label for m in at.metric)]
    hits = [s for s in sources if "H200" in s and "x" in s]
    assert hits, sources  # the name is shown ...
    assert not [s for s in hits if UNESCAPED_MARKUP.search(s)], hits  # ... as text


def _garbled_seed(tmp_path: Path) -> Path:
    root = tmp_path / "traces"
    run = root / "seed" / SEED.name
    shutil.copytree(SEED, run)
    record = json.loads((run / "whatif.json").read_text())
    record["results"][0].update(break_even_calls="many", speedup="fast")
    (run / "whatif.json").write_text(json.dumps(record))
    return root


def test_a_garbled_whatif_record_is_one_line_not_a_traceback(tmp_path, monkeypatch):
    at = open_app(_garbled_seed(tmp_path), monkeypatch)  # the Overview shows the run
    assert not at.exception
    visit(at, "whatif")
    (code,) = [c.value for c in at.code]
    assert "\n" not in code.strip() and "speedup is 'fast', not a number" in code, code
    assert any("could not be read" in t for t in markdown_texts(at))


def test_a_tilde_in_autoprof_dir_means_what_the_writer_takes_it_to_mean(tmp_path, monkeypatch):
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("AUTOPROF_DIR", "~/traces")
    written = env.out_dir().resolve()  # where @autoprof writes its runs
    assert written == cwd / "~" / "traces"
    assert resolve_root("~/traces") == written
    from streamlit.testing.v1 import AppTest
    from support.viewer import APP

    at = AppTest.from_file(APP, default_timeout=60).run()
    assert f"Traces folder: {written}" in list(markdown_texts(at))
