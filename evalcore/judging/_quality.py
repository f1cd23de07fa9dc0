"""Annotator quality and project agreement figures, as the quality dashboard and the API show them.

Labels that count are grades given in time: skipped and unclear answers carry no grade, and too-fast
answers are left out of every label statistic but counted in the annotator's too-fast share. The median
seconds per task is over all of an annotator's answers. Agreement leaves attention checks out (their
documents are written to be obvious); accuracy on gold counts them, as gold.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from evalcore.agreement import (
    METRIC_SPECS,
    AgreementStats,
    AnnotatorQuality,
    LongLabels,
    PairConfusion,
    agreement_report,
    agreement_stats,
    bootstrap_agreement,
    group_medians,
)
from evalcore.jsonable import json_matrix, json_number
from evalcore.judging._answers import Answers
from evalcore.judging._reliability import (
    TOLERANCE,
    Override,
    Reliability,
    annotator_reliability,
    answers_quality,
)

BOOTSTRAP_RESAMPLES = 1_000
CONFIDENCE = 0.95

#: The project agreement metrics the quality figures report, each with a bootstrap interval (names of the
#: agreement family in `evalcore.metrics`; the ratio level does not suit 0-based grades).
QUALITY_AGREEMENT = tuple(spec for spec in METRIC_SPECS if spec.level != "ratio")


def quality_figures(
    answers: Answers,
    *,
    overrides: Mapping[int, Override],
    min_accuracy: float,
    min_gold: int,
    n_resamples: int = BOOTSTRAP_RESAMPLES,
) -> dict[str, Any]:
    """Per-annotator rows, agreement with CIs, the kappa matrices, the label distribution and the
    sufficient statistics, as JSON-ready data."""
    quality = answers_quality(answers)
    reliability = annotator_reliability(
        quality, overrides=overrides, min_accuracy=min_accuracy, min_gold=min_gold
    )
    not_attention = ~answers.on_attention_check
    everyone = answers.labels(answers.counted & not_attention)
    reliable = answers.labels(answers.counted & not_attention & reliability.included[answers.annotator_code])
    report = agreement_report(everyone, level="ordinal")
    with_labels = np.flatnonzero(np.bincount(everyone.annotator, minlength=everyone.n_annotators) > 0)
    names = answers.names()
    return {
        "answers": answers.n_answers,
        "annotators": annotator_rows(answers, quality, reliability),
        "agreement": {
            "all": agreement_figures(everyone, n_resamples=n_resamples),
            "reliable": agreement_figures(reliable, n_resamples=n_resamples),
        },
        "kappa": {
            "annotators": [names[i] for i in with_labels],
            **{
                weights: json_matrix(matrix[np.ix_(with_labels, with_labels)])
                for weights, matrix in report.cohen_kappa.items()
            },
            "shared_items": json_matrix(
                report.confusion.shared_items()[np.ix_(with_labels, with_labels)], integer=True
            ),
        },
        "label_distribution": label_distribution(answers),
        "statistics": {
            "all": {
                "agreement_stats": stats_json(report.stats),
                "pair_confusion": confusion_json(report.confusion, names),
            },
            "reliable": {"agreement_stats": stats_json(agreement_stats(reliable))},
        },
    }


def annotator_rows(
    answers: Answers, quality: AnnotatorQuality, reliability: Reliability
) -> list[dict[str, Any]]:
    """One row per annotator: answers, labels, speed, accuracy on gold, consensus and the verdict."""
    n = answers.annotators.size
    code = answers.annotator_code
    per = np.bincount(code, minlength=n)
    graded = np.bincount(code, weights=answers.graded, minlength=n)
    too_fast = np.bincount(code, weights=answers.too_fast, minlength=n)
    medians = group_medians(code, answers.seconds, n_groups=n)
    names = answers.names()
    return [
        {
            "user_id": user_id,
            "username": names[i],
            "answers": int(per[i]),
            "graded": int(graded[i]),
            "labels": int(quality.n_labels[i]),
            "too_fast": int(too_fast[i]),
            "too_fast_share": json_number(too_fast[i] / graded[i]) if graded[i] else None,
            "median_seconds": json_number(medians[i]),
            "gold_seen": int(quality.gold_seen[i]),
            "gold_accuracy": json_number(quality.gold_accuracy[i]),
            "gold_accuracy_within": json_number(quality.gold_accuracy_within[i]),
            "gold_mae": json_number(quality.gold_mae[i]),
            "consensus_seen": int(quality.consensus_seen[i]),
            "consensus_agreement": json_number(quality.consensus_agreement[i]),
            "consensus_agreement_within": json_number(quality.consensus_agreement_within[i]),
            "meets_thresholds": bool(reliability.meets_thresholds[i]),
            "threshold_reason": reliability.threshold_reasons[i],
            "included": bool(reliability.included[i]),
            "reason": reliability.reasons[i],
        }
        for i, user_id in enumerate(answers.annotators.tolist())
    ]


def agreement_figures(labels: LongLabels, *, n_resamples: int = BOOTSTRAP_RESAMPLES) -> dict[str, Any]:
    """The agreement metrics with percentile bootstrap CIs over items, and the counts behind them."""
    measures: dict[str, dict[str, float | None]] = {}
    for level in dict.fromkeys(spec.level for spec in QUALITY_AGREEMENT):
        specs = [spec for spec in QUALITY_AGREEMENT if spec.level == level]
        kernels = list(dict.fromkeys(spec.measure for spec in specs))
        intervals = bootstrap_agreement(
            labels, measures=kernels, level=level, n_resamples=n_resamples, confidence=CONFIDENCE, seed=0
        )
        for spec in specs:
            ci = intervals[spec.measure]
            measures[spec.name] = {
                "estimate": json_number(ci.estimate),
                "low": json_number(ci.low),
                "high": json_number(ci.high),
            }
    stats = agreement_stats(labels)
    return {
        "n_labels": labels.n_labels,
        "n_items": int(np.count_nonzero(labels.labels_per_item)),
        "n_pairable": stats.n_pairable,
        "n_annotators": int(np.count_nonzero(np.bincount(labels.annotator, minlength=labels.n_annotators))),
        "confidence": CONFIDENCE,
        "n_resamples": n_resamples,
        "measures": {spec.name: measures[spec.name] for spec in QUALITY_AGREEMENT},
    }


def agreement_values(labels: LongLabels) -> dict[str, float | None]:
    """The agreement metrics' point values (no intervals), with the counts they come from."""
    stats = agreement_stats(labels)
    return {
        "n_labels": labels.n_labels,
        "n_pairable": stats.n_pairable,
        **{spec.name: json_number(spec.of(stats)) for spec in QUALITY_AGREEMENT},
    }


def label_distribution(answers: Answers) -> dict[str, Any]:
    """Graded answers per annotator and grade (too-fast ones included: the chart shows behaviour)."""
    grades = sorted(set(answers.grades) | set(np.unique(answers.grade[answers.graded]).astype(int).tolist()))
    graded = answers.graded
    column = np.searchsorted(np.array(grades), answers.grade[graded].astype(np.int64))
    n = answers.annotators.size
    counts = np.bincount(
        answers.annotator_code[graded] * len(grades) + column, minlength=n * len(grades)
    ).reshape(n, len(grades))
    return {"grades": grades, "annotators": answers.names(), "counts": counts.tolist()}


def stats_json(stats: AgreementStats) -> dict[str, Any]:
    return {
        "values": stats.values.tolist(),
        "coincidence": stats.coincidence.tolist(),
        "pair_counts": stats.pair_counts.tolist(),
        "n_items": stats.n_items,
        "n_pairable": stats.n_pairable,
        "n_unanimous": stats.n_unanimous,
        "fleiss_sum": float(stats.fleiss_sum),
        "min_labels": stats.min_labels,
        "max_labels": stats.max_labels,
    }


def confusion_json(confusion: PairConfusion, names: list[str]) -> dict[str, Any]:
    return {
        "annotators": [names[int(i)] for i in range(confusion.n_annotators)],
        "values": confusion.values.tolist(),
        "counts": confusion.counts.tolist(),
    }


__all__ = ["QUALITY_AGREEMENT", "TOLERANCE", "agreement_figures", "agreement_values", "quality_figures"]
