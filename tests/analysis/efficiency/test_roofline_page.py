"""The Roofline page and the Overview's MFU line, driven through Streamlit's AppTest."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from streamlit.testing.v1 import AppTest

REPO = Path(__file__).resolve().parents[3]
APP = str(REPO / "viewer" / "app.py")
RUNS = REPO / "tests" / "data" / "gpu_h200"
PAGE = "../autoprof/viewer/pages/roofline.py"


def _open(root: Path, monkeypatch: pytest.MonkeyPatch, run: str | None = None) -> AppTest:
    monkeypatch.setenv("AUTOPROF_DIR", str(root))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    if run is not None:
        box = at.selectbox(key="run")
        path = next(o for o in box.options if run in str(o))
        box.select(str(root / path.split(" · ")[0])).run()
        assert not at.exception, [e.value for e in at.exception]
    return at


def _visit(at: AppTest, page: str) -> AppTest:
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _texts(at: AppTest) -> list[str]:
    kinds = ("markdown", "caption", "title", "subheader", "info", "warning", "error")
    return [str(el.value).replace("\\", "") for k in kinds for el in getattr(at, k)]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A traces folder with the recorded bf16 8192 GEMM, the elementwise chain and a step
    recorded without shapes."""
    base = tmp_path_factory.mktemp("roofline")
    recorded = json.loads((RUNS / "recorded.json").read_text())["cases"]
    for case in ("eff_gemm_bf16_8192", "eff_elementwise", "attr_dataloader"):
        src = RUNS / recorded[case]["run"]
        shutil.copytree(src, base / case / src.name)
    return base


def test_roofline_page_draws_kernels_under_the_roof(root: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    at = _visit(_open(root, monkeypatch, "eff_gemm_bf16_8192"), PAGE)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Device"] == "NVIDIA H200"
    mfu = next(v for k, v in metrics.items() if k.startswith("MFU"))
    assert 50 < float(mfu.split()[0]) < 90
    chart = at.get("vega_lite_chart")[0]
    frames = [pa.ipc.open_stream(ds.data.data).read_all().to_pandas()
              for ds in chart.proto.datasets]
    points = next(f for f in frames if "kernel" in f.columns)
    roof = next(f for f in frames if "kernel" not in f.columns)
    assert len(points) == 1 and points["bound"].iloc[0] == "compute"
    assert roof["tflops"].max() == pytest.approx(989.5)  # the bf16 ceiling
    assert (points["tflops"] < 989.5).all()
    spec = json.loads(chart.proto.spec)
    assert "log" in json.dumps(spec)
    table = at.dataframe[0].value
    assert {"name", "tflops", "pct_of_peak_flops", "gbps", "bound"} <= set(table.columns)


def test_overview_shows_mfu_beside_the_verdict(root: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    at = _visit(_open(root, monkeypatch, "eff_elementwise"), "../autoprof/viewer/pages/overview.py")
    line = [t for t in _texts(at) if t.startswith("MFU")]
    assert line and "TFLOP/s per step" in line[0] and "NVIDIA H200" in line[0]


def test_no_run_and_memory_bound_run(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = root.parent / "roofline_empty"
    empty.mkdir(exist_ok=True)
    at = _visit(_open(empty, monkeypatch), PAGE)
    assert any("No run selected" in t for t in _texts(at))
    at = _visit(_open(root, monkeypatch, "eff_elementwise"), PAGE)
    table = at.dataframe[0].value
    assert set(table["bound"].dropna()) == {"memory"}


def test_run_without_shapes_says_why_and_draws_no_chart(root: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    at = _visit(_open(root, monkeypatch, "attr_dataloader"), PAGE)
    assert any("record_shapes=True" in t for t in _texts(at))
    assert any("none can be placed on the roofline" in t for t in _texts(at))
    assert not at.get("vega_lite_chart")
    assert len(at.dataframe[0].value) > 0  # the kernels are still listed, with their times
