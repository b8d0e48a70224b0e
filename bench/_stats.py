"""The one percentile every benchmark reports (nearest rank over the sorted samples)."""

from __future__ import annotations


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))] if ordered else 0.0
