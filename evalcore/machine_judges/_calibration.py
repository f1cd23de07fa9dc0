"""A machine judge measured against people on the (query, document) pairs both labelled.

Everything is computed from one sufficient statistic, the human grade x machine grade confusion matrix
(one ``bincount`` over ``human code * K + machine code``), and per topic from a stack of them (one
``bincount`` over ``(topic, human, machine)`` codes): no Python loop runs per pair or per topic. The
kappas and alpha are the agreement package's (``cohen_kappa_from_confusion``,
``krippendorff_alpha_from_coincidence``), not a second implementation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from evalcore.agreement import (
    LongLabels,
    cohen_kappa_from_confusion,
    krippendorff_alpha,
    krippendorff_alpha_from_coincidence,
)
from evalcore.agreement._stats import MAX_VALUES, Level, check_level
from evalcore.jsonable import json_number, json_numbers
from evalcore.stats._validation import FloatArray, IntArray, StatsInputError

#: A grade bias smaller than this (in grade steps) reads as even, neither stricter nor more lenient.
EVEN_BIAS = 1e-12


@dataclass(frozen=True, eq=False)
class GradeBias:
    """How the machine grades the pairs people gave each grade: rows aligned with ``grades``.

    ``pairs[g]`` pairs got ``grades[g]`` from the humans; on them the machine's mean grade is
    ``mean_machine[g]``, its mean signed error ``bias[g] = mean_machine[g] - grades[g]`` (negative:
    stricter), and the shares of pairs it graded lower (``stricter``), equal (``agreeing``) or higher
    (``lenient``). ``NaN`` for a grade no human gave.
    """

    grades: FloatArray
    pairs: IntArray
    mean_machine: FloatArray
    bias: FloatArray
    stricter: FloatArray
    agreeing: FloatArray
    lenient: FloatArray


@dataclass(frozen=True, eq=False)
class TopicAgreement:
    """Agreement per topic, rows aligned with ``topics`` (sorted ids).

    ``exact_agreement`` is the share of a topic's pairs graded alike; the kappas are Cohen's on the
    topic's own confusion matrix (``NaN`` where undefined: a topic where both gave one and the same
    grade throughout); ``bias`` the mean machine minus human grade.
    """

    topics: NDArray[Any]
    pairs: IntArray
    exact_agreement: FloatArray
    cohen_kappa: FloatArray
    cohen_kappa_quadratic: FloatArray
    bias: FloatArray


@dataclass(frozen=True, eq=False)
class ConfidenceBands:
    """Agreement by the machine's stated confidence, in equal-width bands over [0, 1]: whether low
    confidence marks the pairs worth sending to people.

    Band ``b`` holds the pairs with ``edges[b] <= confidence < edges[b + 1]`` (the last band includes 1);
    pairs without a confidence are left out. ``exact_agreement`` and ``mean_abs_error``
    (``mean |machine - human|``) are ``NaN`` in an empty band.
    """

    edges: FloatArray
    pairs: IntArray
    mean_confidence: FloatArray
    exact_agreement: FloatArray
    mean_abs_error: FloatArray


@dataclass(frozen=True, eq=False)
class JudgeCalibration:
    """A machine judge against the human grades of the same pairs.

    ``confusion[h, m]`` counts the pairs people graded ``grades[h]`` and the machine ``grades[m]``
    (``grades``: every grade either side used, sorted). ``bias`` is the mean of machine minus human
    grade: below 0 the machine is stricter, above 0 more lenient. ``per_topic`` is None when no topics
    were given; ``per_confidence`` None when no pair has a confidence.
    """

    pairs: int
    grades: FloatArray
    confusion: IntArray
    exact_agreement: float
    cohen_kappa: float
    cohen_kappa_linear: float
    cohen_kappa_quadratic: float
    krippendorff_alpha_ordinal: float
    mean_human: float
    mean_machine: float
    bias: float
    per_grade: GradeBias
    per_topic: TopicAgreement | None
    per_confidence: ConfidenceBands | None = None

    @property
    def leaning(self) -> str:
        """ "stricter", "more lenient" or "even": the sign of ``bias`` in words."""
        return leaning(self.bias)


def leaning(bias: float) -> str:
    """The direction of a mean machine minus human grade, in words."""
    if not np.isfinite(bias) or abs(bias) <= EVEN_BIAS:
        return "even"
    return "stricter" if bias < 0 else "more lenient"


def calibrate_judge(
    human: ArrayLike,
    machine: ArrayLike,
    *,
    topics: ArrayLike | None = None,
    topic_ids: ArrayLike | None = None,
    confidence: ArrayLike | None = None,
    bands: int = 5,
) -> JudgeCalibration:
    """Agreement, confusion and bias of a machine judge's grades against people's, pair by pair.

    ``human[i]`` and ``machine[i]`` are the two grades of the ``i``-th pair (aligned 1-D arrays of
    numbers; see ``pair_labels`` to align two label files), ``topics[i]`` its query (any ids, or
    integer codes into ``topic_ids``, which saves sorting strings: ``pair_labels`` gives both),
    ``confidence[i]`` the machine's confidence in its grade (from 0 to 1, ``NaN`` where none; see
    ``ConfidenceBands``, ``bands`` of them).
    With the confusion matrix ``C`` (``K x K`` over ``grades``, ``n = sum C``):

    - Cohen's kappa ``1 - n sum(w C) / sum(w r c^T)`` with the margins ``r``, ``c`` and the
      disagreement weights ``w[h, m]``: ``[h != m]`` (unweighted), ``|g_h - g_m|`` (linear),
      ``(g_h - g_m)^2`` (quadratic), on the grade *values*: for integer grades this is
      ``sklearn.metrics.cohen_kappa_score(human, machine, labels=range(min, max + 1), weights=...)``.
    - Krippendorff's alpha (ordinal) of the two coders, from the coincidence matrix ``C + C^T``
      (each pair is a unit with two values). With several humans per pair use
      ``krippendorff_alpha_with_humans``.
    - ``bias = mean(machine - human)``; per human grade see ``GradeBias``; per topic ``TopicAgreement``.

    >>> report = calibrate_judge([0, 1, 2, 2, 1], [0, 2, 2, 1, 1])
    >>> report.confusion.tolist()
    [[1, 0, 0], [0, 1, 1], [0, 1, 1]]
    >>> print(f"{report.cohen_kappa:.4f} {report.bias:.1f} {report.leaning}")
    0.3750 0.0 even
    """
    h, m = _aligned(human, machine)
    grades, codes = np.unique(np.concatenate([h, m]), return_inverse=True)
    k, n = grades.size, h.size
    if k > MAX_VALUES:
        raise StatsInputError(
            f"grades take {k} distinct values; calibration needs at most {MAX_VALUES} (bin them first)"
        )
    h_code, m_code = codes[:n], codes[n:]
    confusion = np.bincount(h_code * k + m_code, minlength=k * k).reshape(k, k)
    counts = confusion.astype(np.float64)
    kappa = {w: float(cohen_kappa_from_confusion(counts, values=grades, weights=w)) for w in (None, "linear", "quadratic")}  # fmt: skip
    difference = m - h
    return JudgeCalibration(
        pairs=n,
        grades=grades,
        confusion=confusion,
        exact_agreement=float(np.trace(counts) / n),
        cohen_kappa=kappa[None],
        cohen_kappa_linear=kappa["linear"],
        cohen_kappa_quadratic=kappa["quadratic"],
        krippendorff_alpha_ordinal=krippendorff_alpha_from_coincidence(
            counts + counts.T, values=grades, level="ordinal"
        ),  # fmt: skip
        mean_human=float(h.mean()),
        mean_machine=float(m.mean()),
        bias=float(difference.mean()),
        per_grade=_grade_bias(grades, h_code, m, difference, confusion),
        per_topic=None
        if topics is None
        else _topic_agreement(topics, topic_ids, h_code, m_code, grades, difference),
        per_confidence=None if confidence is None else confidence_bands(difference, confidence, bands=bands),
    )


def confidence_bands(
    difference: ArrayLike, confidence: ArrayLike, *, bands: int = 5
) -> ConfidenceBands | None:
    """``ConfidenceBands`` of the per-pair errors ``difference = machine - human``; None when no pair has a
    confidence."""
    error = np.asarray(difference, dtype=np.float64)
    conf = np.asarray(confidence, dtype=np.float64)
    if conf.shape != error.shape:
        raise StatsInputError(
            f"confidence must have one entry per pair ({error.size}), got shape {conf.shape}"
        )
    if bands < 1:
        raise StatsInputError(f"bands must be at least 1, got {bands}")
    given = ~np.isnan(conf)
    if not given.any():
        return None
    if ((conf[given] < 0) | (conf[given] > 1)).any():
        raise StatsInputError("confidence must lie between 0 and 1")
    band = np.minimum((conf[given] * bands).astype(np.int64), bands - 1)
    pairs = np.bincount(band, minlength=bands)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = 1.0 / pairs
        return ConfidenceBands(
            edges=np.linspace(0.0, 1.0, bands + 1),
            pairs=pairs,
            mean_confidence=np.bincount(band, weights=conf[given], minlength=bands) * share,
            exact_agreement=np.bincount(band, weights=error[given] == 0, minlength=bands) * share,
            mean_abs_error=np.bincount(band, weights=np.abs(error[given]), minlength=bands) * share,
        )


def krippendorff_alpha_with_humans(
    humans: LongLabels,
    machine_items: ArrayLike,
    machine_labels: ArrayLike,
    *,
    level: Level = "ordinal",
) -> float:
    """Krippendorff's alpha of the humans and the machine as one more coder, on the items the machine graded.

    ``humans`` holds every human label (one annotator per column, several per item, missing ones
    absent); ``machine_items[i]`` is an id among ``humans.items`` and ``machine_labels[i]`` the
    machine's grade of it. Items the machine did not grade are left out, so that the figure measures
    how well the machine fits in with the people where it spoke; items no human graded add nothing
    (a unit needs two values). Equals ``krippendorff.alpha`` on the annotators x items matrix with the
    machine's row appended. ``NaN`` where alpha is undefined.
    """
    items = np.asarray(machine_items)
    labels = np.asarray(machine_labels, dtype=np.float64)
    if items.ndim != 1 or items.shape != labels.shape:
        raise StatsInputError("machine_items and machine_labels must be aligned one-dimensional arrays")
    order = np.argsort(humans.items, kind="stable")
    ranked = humans.items[order]
    at = np.minimum(np.searchsorted(ranked, items), max(ranked.size - 1, 0))
    known = ranked[at] == items if ranked.size else np.zeros(items.size, dtype=bool)
    if not np.all(known):
        raise StatsInputError(f"machine item {items[~known][0]!r} is not among the human labels' items")
    index = order[at]
    keep = np.isin(humans.item, index)
    machine = humans.n_annotators
    both = LongLabels.from_codes(
        np.concatenate([humans.item[keep], index]),
        np.concatenate([humans.annotator[keep], np.full(index.size, machine)]),
        np.concatenate([humans.value[keep], labels]),
        n_items=humans.n_items,
        n_annotators=machine + 1,
    )
    return krippendorff_alpha(both, level=check_level(level))


def _aligned(human: ArrayLike, machine: ArrayLike) -> tuple[FloatArray, FloatArray]:
    h = np.asarray(human, dtype=np.float64)
    m = np.asarray(machine, dtype=np.float64)
    if h.ndim != 1 or h.shape != m.shape:
        raise StatsInputError(
            f"human and machine grades must be aligned 1-D arrays, got {h.shape} and {m.shape}"
        )
    if h.size == 0:
        raise StatsInputError("no pair was labelled by both the humans and the machine")
    if not (np.isfinite(h).all() and np.isfinite(m).all()):
        raise StatsInputError("grades contain NaN or infinite values (leave unlabelled pairs out)")
    return h, m


def _grade_bias(grades: FloatArray, h_code: IntArray, m: FloatArray, difference: FloatArray,
                confusion: IntArray) -> GradeBias:  # fmt: skip
    k = grades.size
    pairs = confusion.sum(axis=1)
    # Cells below the diagonal of row h are machine grades lower than the human's: stricter.
    below = np.tril(np.ones((k, k), dtype=bool), -1)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = 1.0 / pairs
        mean_machine = np.bincount(h_code, weights=m, minlength=k) * share
        return GradeBias(
            grades=grades,
            pairs=pairs,
            mean_machine=mean_machine,
            bias=np.bincount(h_code, weights=difference, minlength=k) * share,
            stricter=(confusion * below).sum(axis=1) * share,
            agreeing=np.diagonal(confusion) * share,
            lenient=(confusion * below.T).sum(axis=1) * share,
        )


def _topic_agreement(topics: ArrayLike, topic_ids: ArrayLike | None, h_code: IntArray, m_code: IntArray, grades: FloatArray,
                     difference: FloatArray) -> TopicAgreement:  # fmt: skip
    ids = np.asarray(topics)
    if ids.shape != h_code.shape:
        raise StatsInputError(f"topics must have one entry per pair ({h_code.size}), got shape {ids.shape}")
    names, topic = np.unique(ids, return_inverse=True)
    if topic_ids is not None:
        names = np.asarray(topic_ids)[names]
    k, t = grades.size, names.size
    stack = np.bincount((topic * k + h_code) * k + m_code, minlength=t * k * k).reshape(t, k, k)
    counts = stack.astype(np.float64)
    pairs = stack.sum(axis=(1, 2))
    return TopicAgreement(
        topics=names,
        pairs=pairs,
        exact_agreement=np.trace(counts, axis1=1, axis2=2) / pairs,
        cohen_kappa=cohen_kappa_from_confusion(counts, values=grades),
        cohen_kappa_quadratic=cohen_kappa_from_confusion(counts, values=grades, weights="quadratic"),
        bias=np.bincount(topic, weights=difference, minlength=t) / pairs,
    )


def calibration_json(report: JudgeCalibration, **head: int) -> dict[str, Any]:
    """The figures as one JSON-ready object, the shape of `calibrate_judge --json` (`head`: counts put
    right after `pairs`). `confusion[h][m]` counts the pairs of human grade `grades[h]` and machine grade
    `grades[m]`; undefined figures are null; `per_topic` and `per_confidence` are there when defined."""
    grade, topic, bands = report.per_grade, report.per_topic, report.per_confidence
    data: dict[str, Any] = {
        "pairs": report.pairs,
        **head,
        "grades": [json_number(g, integer=True) for g in report.grades],
        "exact_agreement": json_number(report.exact_agreement),
        "cohen_kappa": json_number(report.cohen_kappa),
        "cohen_kappa_linear": json_number(report.cohen_kappa_linear),
        "cohen_kappa_quadratic": json_number(report.cohen_kappa_quadratic),
        "krippendorff_alpha_ordinal": json_number(report.krippendorff_alpha_ordinal),
        "confusion": report.confusion.tolist(),
        "mean_human": json_number(report.mean_human),
        "mean_machine": json_number(report.mean_machine),
        "bias": json_number(report.bias),
        "leaning": report.leaning,
        "per_grade": [
            {"grade": json_number(g, integer=True), "pairs": int(p), "mean_machine": m, "bias": b,
             "stricter": s, "agreeing": a, "lenient": le}
            for g, p, m, b, s, a, le in zip(
                grade.grades, grade.pairs, json_numbers(grade.mean_machine), json_numbers(grade.bias),
                json_numbers(grade.stricter), json_numbers(grade.agreeing), json_numbers(grade.lenient),
                strict=True,
            )
        ],
    }  # fmt: skip
    if topic is not None:
        data["per_topic"] = [
            {"topic": str(t), "pairs": int(p), "exact_agreement": e, "cohen_kappa": k,
             "cohen_kappa_quadratic": q, "bias": b}
            for t, p, e, k, q, b in zip(
                topic.topics, topic.pairs, json_numbers(topic.exact_agreement), json_numbers(topic.cohen_kappa),
                json_numbers(topic.cohen_kappa_quadratic), json_numbers(topic.bias), strict=True,
            )
        ]  # fmt: skip
    if bands is not None:
        data["per_confidence"] = [
            {"low": float(low), "high": float(high), "pairs": int(p), "mean_confidence": c,
             "exact_agreement": e, "mean_abs_error": m}
            for low, high, p, c, e, m in zip(
                bands.edges[:-1], bands.edges[1:], bands.pairs, json_numbers(bands.mean_confidence),
                json_numbers(bands.exact_agreement), json_numbers(bands.mean_abs_error), strict=True,
            )
        ]  # fmt: skip
    return data
