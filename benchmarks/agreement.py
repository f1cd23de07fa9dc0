"""Benchmark: Krippendorff's alpha on 1,000,000 labels, evalcore against the ``krippendorff`` package.

Synthetic relevance grades (0-4): 200,000 items, each rated by 5 of 50
annotators (1,000,000 labels). Both sides run in this one process:

- evalcore, from the long-format arrays (item index, annotator index, grade):
  ``LongLabels.from_codes`` (validation and encoding included) and
  ``krippendorff_alpha``;
- ``krippendorff.alpha`` on the dense 50 x 200,000 reliability matrix it
  needs; building that matrix is timed and reported, but not counted.

Each is timed as the best of ``--repeat`` runs, and the two alphas must be
equal to 1e-9 (the exit status is 1 otherwise). Peak traced memory is measured
in a separate run of each (``tracemalloc`` slows the timed runs). The full
Cohen's kappa matrices (unweighted, linear, quadratic) over the 1,225
annotator pairs are timed for evalcore alone.

    .venv/bin/python -m benchmarks.agreement [--json] [--level ordinal]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import krippendorff
import numpy as np

from evalcore.agreement import LEVELS, Level, LongLabels, krippendorff_alpha, pair_confusion

TOLERANCE = 1e-9


def synthetic_grades(
    *, n_items: int, n_annotators: int, per_item: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Long-format labels: each item gets ``per_item`` distinct annotators, grade = truth + noise, clipped to 0-4."""
    rng = np.random.default_rng(seed)
    annotators = np.argpartition(rng.random((n_items, n_annotators)), per_item, axis=1)[:, :per_item]
    truth = rng.integers(0, 5, n_items)
    noise = rng.choice([-2, -1, 0, 0, 0, 1, 2], size=(n_items, per_item))
    grades = np.clip(truth[:, None] + noise, 0, 4).astype(np.float64)
    return np.repeat(np.arange(n_items), per_item), annotators.ravel(), grades.ravel()


def best_of(repeat: int, function: Callable[[], Any]) -> tuple[float, Any]:
    best, result = np.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def peak_mib(function: Callable[[], Any]) -> float:
    tracemalloc.start()
    try:
        function()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def run(
    *, n_items: int, n_annotators: int, per_item: int, level: Level, repeat: int, seed: int
) -> dict[str, Any]:
    items, annotators, grades = synthetic_grades(
        n_items=n_items, n_annotators=n_annotators, per_item=per_item, seed=seed
    )

    def ours() -> float:
        labels = LongLabels.from_codes(items, annotators, grades, n_items=n_items, n_annotators=n_annotators)
        return krippendorff_alpha(labels, level=level)

    def reliability_matrix() -> np.ndarray:
        matrix = np.full((n_annotators, n_items), np.nan)
        matrix[annotators, items] = grades
        return matrix

    build_seconds, matrix = best_of(repeat, reliability_matrix)

    def package() -> float:
        return float(krippendorff.alpha(reliability_data=matrix, level_of_measurement=level))

    ours_seconds, ours_alpha = best_of(repeat, ours)
    package_seconds, package_alpha = best_of(repeat, package)

    labels = LongLabels.from_codes(items, annotators, grades, n_items=n_items, n_annotators=n_annotators)

    def kappa_matrices() -> list[np.ndarray]:
        confusion = pair_confusion(labels)
        return [confusion.kappa_matrix(weights=weights) for weights in (None, "linear", "quadratic")]

    kappa_seconds, kappas = best_of(repeat, kappa_matrices)
    return {
        "n_labels": int(grades.size),
        "n_items": n_items,
        "n_annotators": n_annotators,
        "level": level,
        "evalcore_seconds": ours_seconds,
        "krippendorff_seconds": package_seconds,
        "krippendorff_matrix_build_seconds": build_seconds,
        "speedup": package_seconds / ours_seconds,
        "evalcore_alpha": ours_alpha,
        "krippendorff_alpha": package_alpha,
        "abs_difference": abs(ours_alpha - package_alpha),
        "equal": abs(ours_alpha - package_alpha) <= TOLERANCE,
        "evalcore_peak_mib": peak_mib(ours),
        "krippendorff_peak_mib": peak_mib(package),
        "krippendorff_matrix_mib": matrix.nbytes / 2**20,
        "cohen_pairs": n_annotators * (n_annotators - 1) // 2,
        "cohen_kappa_seconds": kappa_seconds,
        "cohen_kappa_mean_linear": float(np.nanmean(kappas[1])),
        "repeat": repeat,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=200_000)
    parser.add_argument("--annotators", type=int, default=50)
    parser.add_argument("--per-item", type=int, default=5)
    parser.add_argument("--level", choices=LEVELS, default="ordinal")
    parser.add_argument("--repeat", type=int, default=3, help="time the best of this many runs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    result = run(
        n_items=args.items,
        n_annotators=args.annotators,
        per_item=args.per_item,
        level=args.level,
        repeat=args.repeat,
        seed=args.seed,
    )
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"Krippendorff's alpha ({result['level']}) on {result['n_labels']:,} labels "
            f"({result['n_items']:,} items x {args.per_item} of {result['n_annotators']} annotators), "
            f"best of {args.repeat}:"
        )
        print(
            f"  evalcore (long format)          {result['evalcore_seconds'] * 1e3:9.1f} ms"
            f"   alpha {result['evalcore_alpha']:.15f}   peak {result['evalcore_peak_mib']:7.1f} MiB"
        )
        print(
            f"  krippendorff (dense matrix)     {result['krippendorff_seconds'] * 1e3:9.1f} ms"
            f"   alpha {result['krippendorff_alpha']:.15f}   peak {result['krippendorff_peak_mib']:7.1f} MiB"
        )
        print(
            f"    + building its {result['n_annotators']} x {result['n_items']:,} matrix "
            f"{result['krippendorff_matrix_build_seconds'] * 1e3:.1f} ms ({result['krippendorff_matrix_mib']:.0f} MiB), not counted"
        )
        print(
            f"  speedup {result['speedup']:.1f}x; |difference| {result['abs_difference']:.1e} "
            f"({'equal' if result['equal'] else 'NOT equal'} to {TOLERANCE:g})"
        )
        print(
            f"Cohen's kappa matrices (unweighted, linear, quadratic) over {result['cohen_pairs']:,} pairs: "
            f"{result['cohen_kappa_seconds'] * 1e3:.1f} ms"
        )
    return 0 if result["equal"] else 1


if __name__ == "__main__":
    sys.exit(main())
