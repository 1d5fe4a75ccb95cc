"""whatif.json is typed when written and when read: one record type (runfolder/whatif.py) that
the writer builds and the loader reads back, field for field."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path

import pytest

from autoprof.analysis.loader.errors import TraceError
from autoprof.analysis.loader.whatif import read_whatif
from autoprof.record.whatif.result import FixResult
from autoprof.runfolder.whatif import (
    WHATIF_NAME,
    WhatIfRecord,
    WhatIfResult,
    whatif_record,
    write_whatif,
)

REPO = Path(__file__).resolve().parents[3]
COMMITTED = sorted(
    p for p in subprocess.run(["git", "ls-files", "traces", "tests/data"], cwd=REPO,
                              capture_output=True, text=True, check=True).stdout.split()
    if p.endswith("/" + WHATIF_NAME))


def test_there_are_committed_whatif_files() -> None:
    assert len(COMMITTED) >= 3, COMMITTED


@pytest.mark.parametrize("path", COMMITTED)
def test_a_committed_whatif_file_reads_into_the_type_and_back_unchanged(path: str) -> None:
    text = (REPO / path).read_text(encoding="utf-8")
    record = WhatIfRecord.from_json(text, where=path)
    assert json.dumps(record.to_dict()) == json.dumps(json.loads(text))
    assert read_whatif((REPO / path).parent) == json.loads(text)["results"]


def test_the_stored_result_names_every_field_the_measurement_has() -> None:
    measured = [f.name for f in dataclasses.fields(FixResult)]
    assert measured == list(WhatIfResult.__struct_fields__)


def _result(**extra: object) -> dict[str, object]:
    done = FixResult("compile", "torch.compile", applicable=True, status="faster",
                     baseline_us=200.0, fixed_us=100.0, speedup=2.0, outputs_match=True)
    return {**dataclasses.asdict(done), "suggested_by": ["mixed"], **extra}


def test_the_writer_builds_the_typed_record_and_the_loader_reads_it_back(tmp_path: Path) -> None:
    record = whatif_record([_result()], function="m.f", tried=["compile"], baseline_us=200.0)
    write_whatif(tmp_path, record)
    back = WhatIfRecord.from_json((tmp_path / WHATIF_NAME).read_bytes())
    assert back.results[0].is_win() and back.results[0].speedup == 2.0
    assert back.function == "m.f"
    assert read_whatif(tmp_path) == [_result()]


def test_a_field_the_type_does_not_name_is_refused_when_written() -> None:
    with pytest.raises(ValueError, match=r"\['new_field'\] are not in"):
        whatif_record([_result(new_field=1)])
    with pytest.raises(ValueError, match=r"\['who'\] are not in"):
        whatif_record([_result()], who="me")


def test_a_wrongly_typed_field_is_one_line_naming_the_file(tmp_path: Path) -> None:
    bad = {"schema_version": 1, "results": [_result(suggested_by="mixed")]}
    (tmp_path / WHATIF_NAME).write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(TraceError, match=r"whatif\.json.*suggested_by") as err:
        read_whatif(tmp_path)
    assert "\n" not in str(err.value)
