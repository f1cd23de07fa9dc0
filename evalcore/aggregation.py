"""Aggregating several annotators' labels of an item into one label, and the agreement filter.

Every function takes a ``LongLabels`` and returns one value per item, aligned
with ``labels.items`` (``NaN`` for an item without labels). Qrels builds filter
first (``agreement_filter``: keep an item if its labels agree within ±1) and
then aggregate (``aggregate_labels``, the median by default, as seed 004,
section 21.3.2). All of it is vectorised over items: no Python loop per item.

Methods:

- ``median_labels``: the median, with the rounding of an even count named
  (default ``"floor"``, the seed's ``int(np.median(values))``).
- ``mean_labels``: the mean (not rounded).
- ``majority_labels``: the most frequent label; ties go to the lowest tied
  value by default (``tie_break="low"``), or the highest.
- ``dawid_skene``: the Dawid-Skene (1979) EM estimate of each item's true
  label from per-annotator confusion matrices, optionally anchored by gold labels.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import numpy as np
from numpy.typing import NDArray

from evalcore.agreement import ROUNDINGS, LongLabels, Rounding, gold_per_item, item_medians
from evalcore.stats._validation import (
    BoolArray,
    FloatArray,
    IntArray,
    StatsInputError,
    check_choice,
    check_count,
)

__all__ = [
    "DISAGREEMENT",
    "KEPT",
    "METHODS",
    "ROUNDINGS",
    "TOO_FEW_LABELS",
    "AgreementFilter",
    "DawidSkeneResult",
    "Method",
    "Rounding",
    "TieBreak",
    "aggregate_labels",
    "agreement_filter",
    "dawid_skene",
    "majority_labels",
    "mean_labels",
    "median_labels",
]

Method: TypeAlias = Literal["median", "mean", "majority", "dawid_skene"]
METHODS: tuple[Method, ...] = ("median", "mean", "majority", "dawid_skene")
TieBreak: TypeAlias = Literal["low", "high"]

KEPT = "kept"
TOO_FEW_LABELS = "too_few_labels"
DISAGREEMENT = "disagreement"

# crowd-kit's floor on confusion probabilities: a label never seen for a class stays possible.
_MIN_PROBABILITY = 1e-10


@dataclass(frozen=True, eq=False)
class AgreementFilter:
    """Which items the agreement filter keeps, and why each is dropped; arrays are aligned with the items.

    ``reason`` is ``"kept"``, ``"too_few_labels"`` (fewer than ``min_labels``)
    or ``"disagreement"`` (``spread > tolerance``). ``spread`` is the largest
    minus the smallest label (``NaN`` without labels).
    """

    kept: BoolArray
    reason: NDArray[np.str_]
    spread: FloatArray
    n_labels: IntArray
    tolerance: float
    min_labels: int

    def counts(self) -> dict[str, int]:
        """The number of items per reason."""
        return {
            reason: int(np.count_nonzero(self.reason == reason))
            for reason in (KEPT, TOO_FEW_LABELS, DISAGREEMENT)
        }


@dataclass(frozen=True, eq=False)
class DawidSkeneResult:
    """The Dawid-Skene estimate.

    ``labels[u]`` is the most probable class of item ``u`` (``NaN`` without
    labels; the lowest class on a tie), ``posteriors[u, k]`` the probability
    that it is ``classes[k]``. ``confusion[a, k, l]`` is the estimated
    probability that annotator ``a`` answers ``classes[l]`` when the truth is
    ``classes[k]``; ``priors[k]`` the share of class ``k``. ``log_likelihood`` is
    the mean per label of the log-likelihood of the data at the last E-step.
    """

    labels: FloatArray
    posteriors: FloatArray
    classes: FloatArray
    priors: FloatArray
    confusion: FloatArray
    n_iter: int
    converged: bool
    log_likelihood: float


def agreement_filter(labels: LongLabels, *, tolerance: float = 1.0, min_labels: int = 2) -> AgreementFilter:
    """Keep an item when it has at least ``min_labels`` labels and ``max(label) - min(label) <= tolerance``.

    Seed 004 keeps items with two or more labels within ±1 (``tolerance=1``).

    >>> labels = LongLabels.from_records(["a", "a", "b", "b", "c"], [1, 2, 1, 2, 1], [2, 3, 0, 4, 1])
    >>> result = agreement_filter(labels)
    >>> result.kept.tolist(), result.reason.tolist()
    ([True, False, False], ['kept', 'disagreement', 'too_few_labels'])
    """
    if not (np.isfinite(tolerance) and tolerance >= 0):
        raise StatsInputError(f"tolerance must be a finite number >= 0, got {tolerance!r}")
    check_count(min_labels, name="min_labels")
    m = labels.labels_per_item
    spread = _spread(labels)
    enough = m >= min_labels
    close = np.nan_to_num(spread, nan=np.inf) <= tolerance
    reason = np.where(enough, np.where(close, KEPT, DISAGREEMENT), TOO_FEW_LABELS)
    return AgreementFilter(
        kept=enough & close,
        reason=reason,
        spread=spread,
        n_labels=m,
        tolerance=float(tolerance),
        min_labels=min_labels,
    )


def median_labels(labels: LongLabels, *, rounding: Rounding = "floor") -> FloatArray:
    """The median label of each item; see ``evalcore.agreement.item_medians`` for the roundings.

    >>> labels = LongLabels.from_records(["a", "a", "b", "b", "b"], [1, 2, 1, 2, 3], [2, 3, 0, 1, 1])
    >>> median_labels(labels).tolist(), median_labels(labels, rounding="half_up").tolist()
    ([2.0, 1.0], [3.0, 1.0])
    """
    return item_medians(labels, rounding=rounding)


def mean_labels(labels: LongLabels) -> FloatArray:
    """The mean label of each item."""
    m = labels.labels_per_item
    total = np.bincount(labels.item, weights=labels.value, minlength=labels.n_items)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(m > 0, total / m, np.nan)


def majority_labels(labels: LongLabels, *, tie_break: TieBreak = "low") -> FloatArray:
    """The most frequent label of each item; a tie goes to the lowest (``"low"``) or highest tied value.

    >>> labels = LongLabels.from_records(["a", "a", "b", "b", "b"], [1, 2, 1, 2, 3], [2, 3, 0, 1, 1])
    >>> majority_labels(labels).tolist(), majority_labels(labels, tie_break="high").tolist()
    ([2.0, 1.0], [3.0, 1.0])
    """
    check_choice(tie_break, name="tie_break", choices=("low", "high"))
    n_values = max(1, labels.n_values)
    cell, count = np.unique(labels.item * n_values + labels.code, return_counts=True)
    item, code = np.divmod(cell, n_values)
    preference = code if tie_break == "low" else -code
    order = np.lexsort((preference, -count, item))
    first = order[np.r_[True, item[order][1:] != item[order][:-1]]] if order.size else order
    result = np.full(labels.n_items, np.nan)
    result[item[first]] = labels.values[code[first]]
    return result


def dawid_skene(
    labels: LongLabels,
    *,
    gold: Mapping[Any, float] | None = None,
    max_iter: int = 100,
    tol: float = 1e-7,
) -> DawidSkeneResult:
    """Dawid and Skene's (1979) EM estimate of the true label of each item.

    Each annotator ``a`` has a confusion matrix ``pi[a, k, l]``, the
    probability of answering ``l`` when the truth is ``k``. EM starts from the
    vote shares of each item (majority vote, soft), then alternates the M-step
    (``priors`` = mean posterior; ``pi[a, k, l]`` proportional to the posterior
    mass of class ``k`` on the items where ``a`` answered ``l``, floored at 1e-10
    as crowd-kit does) and the E-step (``posterior[u, k]`` proportional to
    ``priors[k] * prod_j pi[a_j, k, l_j]``, in logs), for at most ``max_iter``
    iterations, stopping once the mean log-likelihood per label improves by
    less than ``tol``. Everything is deterministic.

    ``gold`` maps item ids to known true labels: those items' posteriors are
    clamped to their gold class in every E-step, so they anchor the confusion
    matrices. The classes are the label values plus any gold value.
    """
    check_count(max_iter, name="max_iter")
    if not (np.isfinite(tol) and tol >= 0):
        raise StatsInputError(f"tol must be a finite number >= 0, got {tol!r}")
    truth = gold_per_item(labels, gold)
    classes = np.union1d(labels.values, truth[~np.isnan(truth)])
    n_classes, n_annotators = classes.size, labels.n_annotators
    rated = labels.labels_per_item > 0
    # Work on the rated items only, renumbered 0 .. n_rated - 1.
    rated_index = np.cumsum(rated) - 1
    item = rated_index[labels.item]
    n_rated = int(rated.sum())
    code = np.searchsorted(classes, labels.values)[labels.code]
    gold_rated = truth[rated]
    anchored = ~np.isnan(gold_rated)
    anchor = np.zeros((int(anchored.sum()), n_classes))
    anchor[np.arange(anchor.shape[0]), np.searchsorted(classes, gold_rated[anchored])] = 1.0
    used = np.bincount(labels.annotator * n_classes + code, minlength=n_annotators * n_classes) > 0

    votes = np.bincount(item * n_classes + code, minlength=n_rated * n_classes).reshape(n_rated, n_classes)
    posteriors = votes / votes.sum(axis=1, keepdims=True)
    posteriors[anchored] = anchor

    def m_step(posteriors: FloatArray) -> tuple[FloatArray, FloatArray]:
        priors = posteriors.mean(axis=0)
        mass = np.empty((n_annotators, n_classes, n_classes))
        for k in range(n_classes):  # a loop over classes, each a bincount over all labels
            mass[:, k, :] = np.bincount(
                labels.annotator * n_classes + code,
                weights=posteriors[item, k],
                minlength=n_annotators * n_classes,
            ).reshape(n_annotators, n_classes)
        mass = np.where(used.reshape(n_annotators, 1, n_classes), np.maximum(mass, _MIN_PROBABILITY), 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            confusion = np.nan_to_num(mass / mass.sum(axis=2, keepdims=True))
        return priors, confusion

    def e_step(priors: FloatArray, confusion: FloatArray) -> tuple[FloatArray, float]:
        with np.errstate(divide="ignore"):
            log_confusion = np.log(confusion)
            log_joint = np.tile(np.log(priors), (n_rated, 1))
        per_label = log_confusion[labels.annotator, :, code]
        for k in range(n_classes):
            log_joint[:, k] += np.bincount(item, weights=per_label[:, k], minlength=n_rated)
        log_joint[anchored] = np.where(anchor > 0, log_joint[anchored], -np.inf)
        peak = log_joint.max(axis=1, keepdims=True)
        scaled = np.exp(log_joint - peak)
        total = scaled.sum(axis=1, keepdims=True)
        log_likelihood = float((peak + np.log(total)).sum()) / max(1, labels.n_labels)
        return scaled / total, log_likelihood

    priors, confusion = m_step(posteriors)
    previous = -np.inf
    log_likelihood = -np.inf
    converged = False
    n_iter = 0
    while n_iter < max_iter and n_rated:
        n_iter += 1
        posteriors, log_likelihood = e_step(priors, confusion)
        priors, confusion = m_step(posteriors)
        if log_likelihood - previous < tol:
            converged = True
            break
        previous = log_likelihood

    result = np.full(labels.n_items, np.nan)
    result[rated] = classes[np.argmax(posteriors, axis=1)] if n_rated else result[rated]
    full_posteriors = np.full((labels.n_items, n_classes), np.nan)
    full_posteriors[rated] = posteriors
    return DawidSkeneResult(
        labels=result,
        posteriors=full_posteriors,
        classes=classes,
        priors=priors if n_rated else np.full(n_classes, np.nan),
        confusion=confusion,
        n_iter=n_iter,
        converged=converged or not n_rated,
        log_likelihood=log_likelihood,
    )


def aggregate_labels(
    labels: LongLabels,
    *,
    method: Method = "median",
    rounding: Rounding = "floor",
    tie_break: TieBreak = "low",
    gold: Mapping[Any, float] | None = None,
) -> FloatArray:
    """One label per item by ``method`` (``rounding`` for the median, ``tie_break`` for the majority, ``gold`` for Dawid-Skene)."""
    check_choice(method, name="method", choices=METHODS)
    if method == "median":
        return median_labels(labels, rounding=rounding)
    if method == "mean":
        return mean_labels(labels)
    if method == "majority":
        return majority_labels(labels, tie_break=tie_break)
    return dawid_skene(labels, gold=gold).labels


def _spread(labels: LongLabels) -> FloatArray:
    m = labels.labels_per_item
    starts = labels.item_starts[:-1]
    ordered = labels.value[labels.by_item]
    spread = np.full(labels.n_items, np.nan)
    rated = m > 0
    spread[rated] = ordered[starts[rated] + m[rated] - 1] - ordered[starts[rated]]
    return spread
