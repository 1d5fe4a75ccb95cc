"""What a run says about its device: its name and each device's memory, from the manifest
(``device``) or the traces' ``deviceProperties``. One home for both, read by the efficiency
and memory analyses."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from autoprof.runfolder import Manifest


def device_name(record: Manifest | None, trace_metadata: list[dict[str, Any]]
                ) -> str | None:
    """The device name from the manifest (``device.name``), else the trace's
    ``deviceProperties``; None on a CPU-only run."""
    if record is not None and record.device_name is not None:
        return record.device_name
    for meta in trace_metadata:
        props = meta.get("deviceProperties") if isinstance(meta, dict) else None
        if isinstance(props, list) and props and isinstance(props[0], dict):
            name = props[0].get("name")
            if isinstance(name, str):
                return name
    return None


def capacities(record: Manifest | None, trace_metadata: list[dict[str, Any]]
               ) -> dict[str, int]:
    """Each device's memory in bytes: ``deviceProperties[].totalGlobalMem`` of the traces,
    else the manifest's ``device.properties.total_memory``; ``{"cuda:0": 150109880320}``."""
    found = dict(record.device_memory_bytes) if record is not None else {}
    for meta in trace_metadata:
        listed = meta.get("deviceProperties") if isinstance(meta, dict) else None
        for prop in listed if isinstance(listed, list) else []:
            if isinstance(prop, dict) and isinstance(prop.get("totalGlobalMem"), int):
                found[f"cuda:{prop.get('id', 0)}"] = int(prop["totalGlobalMem"])
    return found
