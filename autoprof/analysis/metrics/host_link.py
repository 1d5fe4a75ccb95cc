"""The host-to-device link: the rate a pinned copy reaches, by the device's PCIe generation.

A copy from pinned host memory runs at the link's rate; one from pageable memory is staged by
the driver through a pinned buffer of its own and runs far slower. What pinning buys a copy is
the pinned rate over the copy's own rate, so the pinned rate is needed even where a trace
shows no pinned copy. It is read from the device name:

| link | devices (name contains) | pinned HtoD GB/s | where the figure comes from |
| --- | --- | --- | --- |
| PCIe 5.0 x16 | H100, H200, H20, GH200, B100, B200, RTX PRO 6000 | 48.0 | measured |
| PCIe 4.0 x16 | A100, A10, A30, A40, L4, L40, RTX 30/40/A6000 | 24.0 | derived |

"measured": the median rate of the 36 pinned host-to-device copies of at least 1 MiB in the
committed H200 recordings (tests/data, the `*_pin` loader runs): 48.0 GB/s, quartiles
43.8-49.6 GB/s (-9%, +3%), well inside the 25% a replayed fix's interval allows. On the H100
the catalogue's pageable program copied 16 MiB at 6.5 GB/s under the profiler; timed there
without it (wall clock, medians of 20 copies) pinned copies ran 35.4, 38.9, 53.2 and 54.7 GB/s
at 1, 4, 16 and 64 MiB, pageable ones 9-15 GB/s: the figure is 10% under the large copies'
rate and above the small ones' (their fixed cost is not the link's). "derived": half the PCIe 5.0
figure (a PCIe 4.0 lane carries half as much); not measured on such a device. A device not in
the table gets the PCIe 4.0 figure, the lower one, so pinning is never promised more than the
slower link gives.
"""

from __future__ import annotations

from dataclasses import dataclass

PCIE5_GBPS = 48.0
PCIE4_GBPS = PCIE5_GBPS / 2
_PCIE5 = ("H100", "H200", "H20", "GH200", "B100", "B200", "RTX PRO 6000")


@dataclass(frozen=True)
class HostLink:
    """One device's host-to-device link: its pinned copy rate and where the figure comes
    from ("measured" on such a link, or "derived")."""

    name: str
    pinned_gbps: float
    source: str


def host_link(device: str | None) -> HostLink:
    """The link of the device named `device` (as torch names it); PCIe 4.0 when not known."""
    if device is not None and any(part in device for part in _PCIE5):
        return HostLink("PCIe 5.0 x16", PCIE5_GBPS, "measured")
    return HostLink("PCIe 4.0 x16", PCIE4_GBPS, "derived")


def pinned_us(nbytes: float, link: HostLink) -> float:
    """The time a pinned copy of `nbytes` takes on `link`, in microseconds."""
    return nbytes / (link.pinned_gbps * 1e3)
