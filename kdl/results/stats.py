"""Statistics of the GPU results: order-statistic percentiles and a
percentile-bootstrap confidence interval of the median.

Median, p5 and p95 interpolate linearly between order statistics; the 95%
interval of the median comes from BOOTSTRAP_RESAMPLES resamples with a fixed
seed, so every report regenerates to the same bytes.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from kdl.errors import WorkspaceError

Json = dict[str, Any]

BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 20261122


def percentile(sorted_values: Sequence[float], p: float) -> float:
    """Linear interpolation between order statistics (numpy's default)."""
    if not sorted_values:
        raise WorkspaceError("percentile of no samples")
    idx = p * (len(sorted_values) - 1)
    lo = int(idx)
    hi = min(lo + 1, len(sorted_values) - 1)
    return float(
        sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (idx - lo)
    )


def resample_median(rng: random.Random, sorted_values: Sequence[float]) -> float:
    """The median of one bootstrap resample of *sorted_values* (ascending).

    A resample of n values is n uniform draws U, each picking the value at
    index floor(U * n); its median needs only the middle order statistics of
    the draws, which are drawn directly: the k-th smallest of n uniforms is
    Beta(k, n + 1 - k), and the next one above u is u + (1 - u) * Beta(1,
    n - k). The same distribution as drawing all n values, with one or two
    draws instead of n.
    """
    n = len(sorted_values)
    if n == 0:
        raise WorkspaceError("bootstrap of no samples")
    lo = (n - 1) // 2  # percentile(..., 0.5) interpolates lo and n // 2
    u = rng.betavariate(lo + 1, n - lo)
    low = sorted_values[min(int(u * n), n - 1)]
    if n % 2:
        return float(low)
    v = u + (1 - u) * rng.betavariate(1, n - lo - 1)
    return (low + sorted_values[min(int(v * n), n - 1)]) / 2


def stat(values: Sequence[float], unit: str = "ns") -> Json:
    """median, p5, p95, a bootstrap 95% CI of the median, n."""
    vals = sorted(float(v) for v in values)
    rng = random.Random(BOOTSTRAP_SEED)
    n = len(vals)
    medians = sorted(resample_median(rng, vals) for _ in range(BOOTSTRAP_RESAMPLES))
    return {
        "n": n,
        "unit": unit,
        "median": rounded(percentile(vals, 0.5)),
        "p5": rounded(percentile(vals, 0.05)),
        "p95": rounded(percentile(vals, 0.95)),
        "ci95_median": [
            rounded(percentile(medians, 0.025)),
            rounded(percentile(medians, 0.975)),
        ],
        "bootstrap": f"percentile, {BOOTSTRAP_RESAMPLES} resamples (median as "
        f"order statistics), seed "
        f"{BOOTSTRAP_SEED}",
    }


def rounded(x: float) -> float:
    return float(f"{x:.6g}")


def median_diff_ci(a: Sequence[float], b: Sequence[float]) -> list[float]:
    """Bootstrap 95% CI of median(a) - median(b), both resampled."""
    rng = random.Random(BOOTSTRAP_SEED)
    a, b = sorted(a), sorted(b)
    diffs = sorted(
        resample_median(rng, a) - resample_median(rng, b)
        for _ in range(BOOTSTRAP_RESAMPLES)
    )
    return [rounded(percentile(diffs, 0.025)), rounded(percentile(diffs, 0.975))]
