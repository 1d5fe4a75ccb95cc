"""One reader for every AUTOPROF_* variable, one table of them in docs/environment.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from autoprof import env

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("text", ["0", "false", "OFF", "No", " off "])
def test_a_switch_is_off_for_the_false_words_in_any_case(text, monkeypatch):
    monkeypatch.setenv("AUTOPROF_CACHE", text)
    assert env.cache_enabled() is False
    monkeypatch.setenv("AUTOPROF", text)
    assert env.enabled() is False


@pytest.mark.parametrize("text", ["", "1", "yes", "ON", "true"])
def test_a_switch_is_on_otherwise(text, monkeypatch):
    monkeypatch.setenv("AUTOPROF_CACHE", text)
    assert env.cache_enabled() is True


@pytest.mark.parametrize(("text", "expected"), [("", 30.0), ("x", 30.0), ("-1", 30.0),
                                                 ("0", 30.0), ("inf", 30.0), ("2.5", 2.5)])
def test_a_timeout_falls_back_to_its_default(text, expected, monkeypatch):
    monkeypatch.setenv("AUTOPROF_FINISH_TIMEOUT_S", text)
    assert env.finish_timeout_s() == expected


def test_numbers_and_their_ranges(monkeypatch):
    monkeypatch.setenv("AUTOPROF_CACHE_MIN_BYTES", "0")
    assert env.cache_min_bytes() == 0
    monkeypatch.setenv("AUTOPROF_MAX_TRACE_BYTES", "0")
    assert env.max_trace_bytes() == env.DEFAULT_MAX_TRACE_BYTES
    monkeypatch.setenv("AUTOPROF_MAX_TRACE_BYTES", "1024")
    assert env.max_trace_bytes() == 1024
    monkeypatch.setenv("AUTOPROF_DIR", "  ")
    assert env.out_dir() == Path("traces")


def test_cache_off_in_capitals_turns_the_loader_cache_off(tmp_path, monkeypatch):
    from autoprof import load
    from autoprof.analysis.loader.cache import cache_path

    trace = tmp_path / "t.json"
    trace.write_text('{"traceEvents": [{"ph": "X", "name": "a", "cat": "cpu_op", "ts": 1, '
                     '"dur": 2, "pid": 1, "tid": 1}]}')
    monkeypatch.setenv("AUTOPROF_CACHE_MIN_BYTES", "0")
    monkeypatch.setenv("AUTOPROF_CACHE", "OFF")
    load(trace)
    assert not cache_path(trace).exists()
    monkeypatch.setenv("AUTOPROF_CACHE", "on")
    load(trace)
    from autoprof.analysis.loader.cache import wait_for_writes

    wait_for_writes()
    assert cache_path(trace).exists()


def test_no_module_reads_an_autoprof_variable_but_env():
    reads = re.compile(r"""(environ\.get|getenv|environ\[)\(?\s*["']AUTOPROF""")
    offenders = [str(p.relative_to(REPO)) for p in (REPO / "autoprof").rglob("*.py")
                 if p.name != "env.py" and reads.search(p.read_text())]
    assert offenders == []


def test_the_docs_table_lists_exactly_the_variables_env_reads():
    source = (REPO / "autoprof" / "env.py").read_text()
    read = set(re.findall(r'"(AUTOPROF(?:_[A-Z_]+)?)"', source))
    table = (REPO / "docs" / "environment.md").read_text()
    documented = set(re.findall(r"^\| `(AUTOPROF(?:_[A-Z_]+)?)` \|", table, flags=re.M))
    assert read == documented
