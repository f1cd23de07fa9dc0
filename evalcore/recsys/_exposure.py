"""How recommendations spread over the catalog: coverage, the Gini coefficient of exposure, categories.

The sufficient statistic is the exposure vector: how many top-k lists recommend each catalog item
(`RecommendationLists.exposure`, one `bincount`). Every measure here is a function of it.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from evalcore.recsys._data import FloatArray, IntArray, RecommendationLists, RecsysInputError, distinct


def catalog_coverage(lists: RecommendationLists, *, k: int | None = None) -> float:
    """Share of the catalog that appears in at least one top-k list: |∪ L_u| / |catalog|.

    The denominator is the catalog the lists are coded against (`n_items`), items never
    recommended included; seed 004 divides by its popularity table, which is the same catalog.

    >>> catalog_coverage(RecommendationLists.from_matrix([[0, 1], [1, 2]], n_items=6))
    0.5
    """
    if lists.n_items == 0:
        return float("nan")
    return unique_items_recommended(lists, k=k) / lists.n_items


def unique_items_recommended(lists: RecommendationLists, *, k: int | None = None) -> int:
    """How many distinct catalog items appear in at least one top-k list."""
    return int(np.count_nonzero(lists.top(k).exposure()))


def gini_coefficient(values: ArrayLike) -> float:
    """The Gini coefficient of non-negative values: sum_i (2i - n - 1) x_(i) / (n sum_i x_i).

    x_(1) <= ... <= x_(n) are the values sorted ascending. 0 when all are equal, (n - 1) / n when
    one holds everything; NaN when there are no values or they sum to 0.

    >>> round(gini_coefficient([1, 1, 1, 1, 2, 3]), 4)
    0.2407
    """
    x = np.sort(np.asarray(values, dtype=np.float64))
    if x.ndim != 1:
        raise RecsysInputError(f"values must be one-dimensional, got shape {x.shape}")
    if x.size and (not np.isfinite(x).all() or x[0] < 0):
        raise RecsysInputError("values must be finite and non-negative")
    n = x.size
    total = x.sum()
    if n == 0 or total == 0:
        return float("nan")
    weights = 2.0 * np.arange(1, n + 1, dtype=np.float64) - n - 1
    return float(weights @ x / (n * total))


def gini(lists: RecommendationLists, *, k: int | None = None) -> float:
    """Gini coefficient of exposure over the whole catalog, items never recommended counting as 0.

    This is the default: a system that recommends a tenth of the catalog is unequal even if it
    spreads its slots evenly over that tenth. `gini_recommended` is seed 004's variant.
    """
    return gini_coefficient(lists.top(k).exposure())


def gini_recommended(lists: RecommendationLists, *, k: int | None = None) -> float:
    """Gini coefficient of exposure over the recommended items only (seed 004's variant).

    It ignores every item no list recommends, so it measures concentration among the items shown,
    not over the catalog; it can be low while coverage is poor.
    """
    exposure = lists.top(k).exposure()
    return gini_coefficient(exposure[exposure > 0])


def item_categories(categories: ArrayLike, n_items: int) -> IntArray:
    """One category code per catalog item, -1 for an item without one."""
    codes = np.asarray(categories)
    if codes.shape != (n_items,) or (codes.size and not np.issubdtype(codes.dtype, np.integer)):
        raise RecsysInputError(f"categories must be one integer code per catalog item ({n_items})")
    codes = codes.astype(np.int64, copy=False)
    if codes.size and codes.min() < -1:
        raise RecsysInputError("category codes must be >= 0, or -1 for an item without a category")
    return codes


def category_coverage(lists: RecommendationLists, categories: ArrayLike, *, k: int | None = None) -> float:
    """Share of the catalog's categories that some top-k list recommends an item of.

    |{cat(i) : i recommended}| / |{cat(i) : i in the catalog}|, items without a category (-1) left
    out of both. Seed 004 counts such items as a category "unk" in the numerator only, which can
    push its value above 1.
    """
    return category_coverage_from_exposure(
        lists.top(k).exposure(), item_categories(categories, lists.n_items)
    )


def category_coverage_from_exposure(exposure: IntArray, codes: IntArray) -> float:
    known = codes >= 0
    if not known.any():
        return float("nan")
    shown = known & (exposure > 0)
    if int(codes.max()) > codes.size:  # sparse codes (given through the API): sort them
        return distinct(codes[shown]).size / distinct(codes[known]).size
    # The readers' codes are 0 .. categories - 1: a tally counts the distinct ones without a sort.
    every = np.bincount(codes[known])
    return np.count_nonzero(np.bincount(codes[shown], minlength=every.size)) / np.count_nonzero(every)


def exposure_share(lists: RecommendationLists, *, k: int | None = None) -> FloatArray:
    """Each catalog item's share of all recommended slots (the distribution the Gini summarises)."""
    exposure = lists.top(k).exposure().astype(np.float64)
    total = exposure.sum()
    return exposure / total if total else exposure
