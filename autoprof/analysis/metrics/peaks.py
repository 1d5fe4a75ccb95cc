"""Device peaks: dense TFLOP/s per dtype and memory bandwidth, each from the vendor's datasheet.

Keyed by the device name as torch reports it (the trace's ``deviceProperties[0].name`` or the
manifest's ``device.name``). Figures are *dense* (no structured sparsity), for the boost clock
the datasheet quotes; ``fp32`` is the non-tensor-core rate, ``tf32`` / ``bf16`` / ``fp16`` /
``fp8`` the tensor-core rates (fp16 / bf16 with fp32 accumulate), ``fp64`` the FP64 tensor-core
rate where the part has one (no ``fp64`` entry where the datasheet gives none). Datasheets
that print only the sparse figure are halved.

| device | bf16 TFLOP/s | GB/s |
| --- | --- | --- |
| NVIDIA H200 | 989.5 | 4800 |
| NVIDIA A100-SXM4-80GB | 312 | 2039 |

A device not in the table still gets every absolute figure; its shares of peak are null unless
the ``peak_tflops`` / ``peak_gbps`` arguments of ``efficiency`` (the analysis's options: a
flag, else ``AUTOPROF_PEAK_TFLOPS`` / ``AUTOPROF_PEAK_GBPS``) supply them. Nothing here reads
the environment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Peak:
    """One device's roof: dense TFLOP/s per dtype, memory bandwidth in GB/s, and where the
    figures come from."""

    device: str
    tflops: dict[str, float] = field(default_factory=dict)
    gbps: float | None = None
    source: str = ""

    def for_dtype(self, dtype: str) -> float | None:
        """The compute roof for ``dtype`` (None when the table has no figure for it)."""
        return self.tflops.get(dtype)

    def ridge(self, dtype: str) -> float | None:
        """FLOPs per byte where the compute roof meets the bandwidth roof."""
        top = self.for_dtype(dtype)
        if top is None or not self.gbps:
            return None
        return top * 1e12 / (self.gbps * 1e9)

    def to_dict(self) -> dict[str, Any]:
        return {"tflops": dict(self.tflops), "gbps": self.gbps, "source": self.source}


def _p(fp64: float | None, fp32: float, tf32: float, bf16: float, fp16: float, fp8: float | None,
       gbps: float, source: str) -> tuple[dict[str, float], float, str]:
    tflops = {"fp32": fp32, "tf32": tf32, "bf16": bf16, "fp16": fp16}
    for dtype, value in (("fp64", fp64), ("fp8", fp8)):  # None: the datasheet gives none
        if value is not None:
            tflops[dtype] = value
    return tflops, gbps, source


_A100 = "NVIDIA A100 Tensor Core GPU datasheet (2021, 'A100 80GB' / '40GB' columns)"
_H100 = "NVIDIA H100 Tensor Core GPU datasheet (2023); sparse figures halved"
_H200 = "NVIDIA H200 Tensor Core GPU datasheet (2024, H200 SXM column); sparse figures halved"
_ADA = "NVIDIA Ada Lovelace GPU architecture whitepaper v2.1, appendix table (GeForce RTX 4090)"

# device name (lower case, as torch reports it) -> figures
_TABLE: dict[str, tuple[dict[str, float], float, str]] = {
    "nvidia a100-sxm4-80gb": _p(19.5, 19.5, 156, 312, 312, None, 2039, _A100 + ", SXM"),
    "nvidia a100-sxm4-40gb": _p(19.5, 19.5, 156, 312, 312, None, 1555, _A100 + ", SXM"),
    "nvidia a100 80gb pcie": _p(19.5, 19.5, 156, 312, 312, None, 1935, _A100 + ", PCIe"),
    "nvidia a100-pcie-40gb": _p(19.5, 19.5, 156, 312, 312, None, 1555, _A100 + ", PCIe"),
    "nvidia h100 80gb hbm3": _p(67, 67, 494.5, 989.5, 989.5, 1979, 3350, _H100 + ", H100 SXM"),
    "nvidia h100 pcie": _p(51, 51, 378, 756, 756, 1513, 2000, _H100 + ", H100 PCIe"),
    "nvidia h100 nvl": _p(60, 60, 417.5, 835.5, 835.5, 1670.5, 3900, _H100 + ", H100 NVL"),
    "nvidia h200": _p(67, 67, 494.5, 989.5, 989.5, 1979, 4800, _H200),
    "nvidia l4": _p(None, 30.3, 60, 121, 121, 242.5, 300,
                    "NVIDIA L4 Tensor Core GPU datasheet (2023); sparse figures halved"),
    "nvidia l40s": _p(None, 91.6, 183, 362.05, 362.05, 733, 864,
                      "NVIDIA L40S GPU datasheet (2023); sparse figures halved"),
    "nvidia a10": _p(None, 31.2, 62.5, 125, 125, None, 600,
                     "NVIDIA A10 Tensor Core GPU datasheet (2021)"),
    "nvidia a10g": _p(None, 31.2, 62.5, 125, 125, None, 600,
                      "NVIDIA A10 Tensor Core GPU datasheet (2021): NVIDIA publishes no A10G "
                      "(AWS) datasheet, so these are the A10's figures; the A10G runs at lower "
                      "clocks, set AUTOPROF_PEAK_TFLOPS / AUTOPROF_PEAK_GBPS for exact ones"),
    "nvidia geforce rtx 4090": _p(None, 82.6, 82.6, 165.2, 165.2, 330.3, 1008, _ADA),
    "amd instinct mi300x": _p(163.4, 163.4, 653.7, 1307.4, 1307.4, 2614.9, 5300,
                              "AMD Instinct MI300X accelerator datasheet (2023), matrix "
                              "(dense) figures"),
}

_SPACES = re.compile(r"\s+")


def known_devices() -> list[str]:
    """The device names the table knows (lower case)."""
    return sorted(_TABLE)


def lookup(device: str | None) -> Peak | None:
    """The table's figures for ``device``; None for an unknown or missing name."""
    if not device:
        return None
    key = _SPACES.sub(" ", device.strip().lower())
    found = _TABLE.get(key)
    if found is None:
        return None
    tflops, gbps, source = found
    return Peak(device=device, tflops=dict(tflops), gbps=gbps, source=source)


def peak_for(device: str | None, peak_tflops: float | None = None,
             peak_gbps: float | None = None) -> Peak:
    """The roof to measure against: the table's figures for ``device``, with a given peak
    replacing them (the analysis's options: a flag, else ``AUTOPROF_PEAK_TFLOPS`` /
    ``AUTOPROF_PEAK_GBPS``, read at the edge by ``analysis.default_options``).

    A given TFLOP/s figure applies to every dtype (it is what the user says the device does).
    An unknown device without overrides gets an empty Peak: shares of peak come out null.
    """
    tflops, gbps = peak_tflops, peak_gbps
    base = lookup(device) or Peak(device=device or "unknown")
    if tflops is None and gbps is None:
        return base
    sources = [base.source] if base.source else []
    if tflops is not None:
        sources.append(f"TFLOP/s given ({tflops:g}, every dtype)")
    if gbps is not None:
        sources.append(f"bandwidth given ({gbps:g} GB/s)")
    flops_by_dtype = ({d: tflops for d in (*base.tflops, *_DTYPES)} if tflops is not None
                      else dict(base.tflops))
    return Peak(device=base.device, tflops=flops_by_dtype,
                gbps=gbps if gbps is not None else base.gbps, source="; ".join(sources))


_DTYPES = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8")
