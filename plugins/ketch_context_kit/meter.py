"""The utilization meter: active context over effective capacity, in colour bands."""

from __future__ import annotations


def band(utilization: float) -> str:
    """The meter's colour band: green < 70%, amber < 85%, orange < 95%, red."""
    if utilization < 0.70:
        return "green"
    if utilization < 0.85:
        return "amber"
    if utilization < 0.95:
        return "orange"
    return "red"
