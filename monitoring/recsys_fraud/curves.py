"""The curves the recommendation and fraud dashboards draw, built by the jobs from the core's sufficient
statistics (the exposure vector, the score curve, the detection times) and thinned to a bounded number
of points; the pages only lay them out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from evalcore.fraud import FraudEvaluation, precision_recall_curve_from, roc_curve_from
from evalcore.jsonable import json_number, json_numbers

#: Points per progress axis of a thinned curve (a curve keeps at most a few times this many).
CURVE_POINTS = 200
#: Points of the Lorenz curve (evenly spaced shares of the catalog).
LORENZ_POINTS = 201
#: Categories listed one by one in the coverage table (the most recommended); the rest are summed up.
COVERAGE_ROWS = 50
#: Bins of the time-to-detection histogram, at most.
TTD_BINS = 30
#: Undetected entities named on the dashboard (all are counted).
UNDETECTED_LISTED = 50


def thinned(
    n: int, *progress: np.ndarray, points: int = CURVE_POINTS, keep: Iterable[int] = ()
) -> np.ndarray:
    """Indices of at most about (len(progress) + 1) * points of a curve's n points: evenly spaced, and
    evenly spaced along each non-decreasing `progress` array (so that a steep stretch keeps its detail),
    first and last always, and the points in `keep`."""
    kept = [int(i) for i in keep if 0 <= int(i) < n]
    if n <= points * (len(progress) + 1):
        return np.arange(n, dtype=np.int64)
    chosen = [np.round(np.linspace(0, n - 1, points)).astype(np.int64), np.asarray(kept, dtype=np.int64)]
    for values in progress:
        finite = np.isfinite(values)
        if not finite.all():
            continue
        targets = np.linspace(values[0], values[-1], points)
        chosen.append(np.minimum(np.searchsorted(values, targets), n - 1).astype(np.int64))
    return np.unique(np.concatenate(chosen))


def lorenz_curve(exposure: np.ndarray, *, points: int = LORENZ_POINTS) -> dict[str, Any]:
    """The Lorenz curve of exposure over the whole catalog: the least recommended share x of the items
    gets the share y of the recommended slots. 1 - 2 x (area under it) is the Gini coefficient."""
    ordered = np.sort(np.asarray(exposure, dtype=np.float64))
    n, total = ordered.size, float(ordered.sum())
    cumulative = np.concatenate([[0.0], np.cumsum(ordered)])
    at = np.unique(np.round(np.linspace(0, n, min(points, n + 1))).astype(np.int64))
    shares = cumulative[at] / total if total else np.full(at.size, np.nan)
    return {
        "items": json_numbers(at / max(n, 1)),
        "exposure": json_numbers(shares),
        "n_items": n,
        "n_slots": int(total),
    }


def popularity_histogram(popularity: np.ndarray, exposure: np.ndarray) -> dict[str, Any]:
    """Catalog items, recommended items and recommended slots by popularity, in doubling bins
    [0, 1), [1, 2), [2, 4), [4, 8), ...: how far the lists lean to the popular items."""
    values = np.asarray(popularity, dtype=np.float64)
    top = float(values.max()) if values.size else 0.0
    edges = [0.0, 1.0]
    while edges[-1] <= top:
        edges.append(edges[-1] * 2)
    bins = np.searchsorted(np.asarray(edges), values, side="right") - 1
    size = len(edges) - 1
    shown = np.asarray(exposure) > 0
    return {
        "edges": edges,
        "catalog_items": np.bincount(bins, minlength=size).tolist(),
        "recommended_items": np.bincount(bins[shown], minlength=size).tolist(),
        "slots": np.bincount(bins, weights=exposure, minlength=size).astype(np.int64).tolist(),
    }


def _coverage_row(
    category: str | None, items: int, recommended: int, slots: int, total_slots: int
) -> dict[str, Any]:
    return {
        "category": category, "items": items, "recommended": recommended, "slots": slots,
        "coverage": recommended / items if items else None,
        "slot_share": slots / total_slots if total_slots else None,
    }  # fmt: skip


def coverage_table(
    exposure: np.ndarray, categories: np.ndarray | None, names: list[str] | None, *, rows: int = COVERAGE_ROWS
) -> dict[str, Any]:
    """Catalog coverage overall and per category (the most recommended `rows` categories one by one,
    the others summed up): items, items recommended, recommended slots and their shares."""
    exposure = np.asarray(exposure, dtype=np.int64)
    shown = exposure > 0
    total_slots = int(exposure.sum())
    table: dict[str, Any] = {
        "total": _coverage_row(None, int(exposure.size), int(shown.sum()), total_slots, total_slots),
        "categories": [],
        "other": None,
    }
    if categories is None:
        return table
    codes = np.asarray(categories, dtype=np.int64)
    known = codes >= 0
    size = int(codes.max()) + 1 if known.any() else 0
    items = np.bincount(codes[known], minlength=size)
    recommended = np.bincount(codes[known & shown], minlength=size)
    slots = np.bincount(codes[known], weights=exposure[known], minlength=size).astype(np.int64)
    order = sorted(range(size), key=lambda c: (-slots[c], -items[c], c))
    labels = names if names is not None and len(names) == size else [f"category {c + 1}" for c in range(size)]
    table["categories"] = [
        _coverage_row(labels[c], int(items[c]), int(recommended[c]), int(slots[c]), total_slots)
        for c in order[:rows]
    ]
    rest = order[rows:]
    if rest:
        table["other"] = _coverage_row(
            f"{len(rest)} other categories", int(items[rest].sum()), int(recommended[rest].sum()),
            int(slots[rest].sum()), total_slots,
        )  # fmt: skip
    return table


def recsys_curves(
    exposure: np.ndarray,
    popularity: np.ndarray | None,
    categories: np.ndarray | None,
    names: list[str] | None,
) -> dict[str, Any]:
    return {
        "lorenz": lorenz_curve(exposure),
        "popularity": None if popularity is None else popularity_histogram(popularity, exposure),
        "coverage": coverage_table(exposure, categories, names),
    }


def _operating_index(thresholds: np.ndarray, threshold: float) -> int | None:
    """The curve point that flagging score >= threshold reaches (thresholds decreasing), None if it flags
    nothing."""
    if not math.isfinite(threshold):
        return None
    at_or_above = int(np.searchsorted(-thresholds, -threshold, side="right"))
    return at_or_above - 1 if at_or_above else None


def cost_curve(evaluated: FraudEvaluation) -> dict[str, np.ndarray]:
    """The total cost of flagging score >= t at every distinct score t: fp_cost x FP(t) plus the cost of
    the frauds scoring below t (fn_cost, times each one's amount when the examples have amounts)."""
    curve, examples, options = evaluated.curve, evaluated.examples, evaluated.options
    if examples.amounts is None:
        missed = (curve.n_positive - curve.tp) * options.fn_cost
    else:
        frauds = examples.labels
        order = np.argsort(-examples.scores[frauds], kind="stable")
        caught = np.concatenate([[0.0], np.cumsum(examples.amounts[frauds][order])])
        missed = (caught[-1] - caught[curve.tp]) * options.fn_cost
    return {"threshold": curve.thresholds, "total_cost": options.fp_cost * curve.fp + missed}


def _points(columns: dict[str, np.ndarray], at: np.ndarray) -> dict[str, list[float | None]]:
    return {name: json_numbers(np.asarray(values, dtype=np.float64)[at]) for name, values in columns.items()}


def fraud_curves(evaluated: FraudEvaluation) -> dict[str, Any]:
    """The ROC and PR curves, the cost against the threshold (each thinned, the operating point kept),
    the operating point itself and the histogram of the times to detection."""
    curve, cost = evaluated.curve, evaluated.cost
    threshold = evaluated.operating_threshold
    fpr, tpr, roc_thresholds = roc_curve_from(curve)
    precision, recall, pr_thresholds = precision_recall_curve_from(curve)
    operating = _operating_index(roc_thresholds[1:], threshold)
    roc_keep = [] if operating is None else [operating + 1]
    roc_at = thinned(fpr.size, fpr, tpr, keep=roc_keep)
    pr_at = thinned(recall.size, -recall, keep=[])
    costs = cost_curve(evaluated)
    cost_operating = _operating_index(curve.thresholds, threshold)
    cost_keep = [int(np.argmin(costs["total_cost"]))] if curve.n else []
    cost_at = thinned(
        curve.thresholds.size, keep=cost_keep + ([] if cost_operating is None else [cost_operating])
    )
    flagged = cost.tp + cost.fp
    return {
        "roc": _points({"fpr": fpr, "tpr": tpr, "threshold": roc_thresholds}, roc_at),
        "pr": _points(
            {
                "recall": recall,
                "precision": precision,
                "threshold": np.concatenate([pr_thresholds, [np.nan]]),
            },
            pr_at,
        ),  # fmt: skip
        "cost": _points(costs, cost_at),
        "operating": {
            "threshold": json_number(threshold),
            "flags_nothing": flagged == 0,
            "rule": evaluated.operating.rule,
            "note": evaluated.operating.note,
            "fpr": json_number(cost.fp / curve.n_negative if curve.n_negative else math.nan),
            "tpr": json_number(cost.tp / curve.n_positive if curve.n_positive else math.nan),
            "precision": json_number(cost.tp / flagged if flagged else math.nan),
            "total_cost": json_number(cost.total_cost),
            "flagged": flagged,
        },
        "ttd": ttd_histogram(evaluated),
    }


def ttd_histogram(evaluated: FraudEvaluation, *, bins: int = TTD_BINS) -> dict[str, Any] | None:
    """The delays to detection of the detected entities in at most `bins` equal bins from 0, and the
    entities never detected (the first `UNDETECTED_LISTED` named, all counted); None without entities
    and timestamps."""
    times = evaluated.detection_times
    if times is None:
        return None
    delays = times.delays[~np.isnan(times.delays)]
    histogram: dict[str, Any] = {"edges": [], "counts": []}
    if delays.size:
        top = float(delays.max()) or 1.0
        count = max(1, min(bins, math.ceil(math.sqrt(delays.size))))
        counts, edges = np.histogram(delays, bins=count, range=(0.0, top))
        histogram = {"edges": edges.tolist(), "counts": counts.tolist()}
    undetected = times.undetected
    return {
        **histogram,
        "n_anomalous": times.n_anomalous,
        "n_detected": times.n_detected,
        "undetected": [str(entity) for entity in undetected[:UNDETECTED_LISTED].tolist()],
        "n_undetected": int(undetected.size),
    }
