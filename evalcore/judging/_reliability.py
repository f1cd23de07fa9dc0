"""Which annotators are reliable: accuracy on gold against thresholds, then the leads' overrides."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, TypeAlias

import numpy as np

from evalcore.agreement import AnnotatorQuality, annotator_quality
from evalcore.judging._answers import Answers
from evalcore.stats._validation import BoolArray, IntArray

#: A lead's decision about an annotator: the thresholds decide (`auto`), or always `include` / `exclude`.
Override: TypeAlias = Literal["auto", "include", "exclude"]
OVERRIDES: dict[Override, str] = {
    "auto": "Automatic (accuracy on gold)",
    "include": "Reinstated by a lead",
    "exclude": "Disqualified by a lead",
}

Reason: TypeAlias = Literal["reliable", "too_few_gold", "low_accuracy", "reinstated", "disqualified"]
REASONS: dict[Reason, str] = {
    "reliable": "accurate on gold",
    "too_few_gold": "too few gold items",
    "low_accuracy": "inaccurate on gold",
    "reinstated": "reinstated by a lead",
    "disqualified": "disqualified by a lead",
}

#: "Within ±1" in accuracy on gold, consensus agreement and pairwise agreement.
TOLERANCE = 1


@dataclass(frozen=True, eq=False)
class Reliability:
    """Which annotators' labels go into qrels; arrays aligned with `annotators` (user ids)."""

    annotators: IntArray
    meets_thresholds: BoolArray
    included: BoolArray
    reasons: list[Reason]
    threshold_reasons: list[Reason]


def annotator_reliability(
    quality: AnnotatorQuality, *, overrides: Mapping[int, Override], min_accuracy: float, min_gold: int
) -> Reliability:
    """Seed 004's rule (exact accuracy on gold >= `min_accuracy` on >= `min_gold` items), then overrides.

    `overrides` maps an annotator's id to a lead's decision; annotators not in it are `auto`.
    """
    ids = np.asarray(quality.annotators, dtype=np.int64)
    meets = quality.reliable(min_accuracy=min_accuracy, min_gold=min_gold)
    verdicts: list[Reason] = [
        "reliable" if ok else "too_few_gold" if seen < min_gold else "low_accuracy"
        for ok, seen in zip(meets.tolist(), quality.gold_seen.tolist(), strict=True)
    ]
    decisions = [overrides.get(user_id, "auto") for user_id in ids.tolist()]
    included = np.array(
        [d == "include" or (d == "auto" and ok) for d, ok in zip(decisions, meets.tolist(), strict=True)],
        dtype=np.bool_,
    )
    reasons: list[Reason] = [
        "reinstated" if d == "include" else "disqualified" if d == "exclude" else verdict
        for d, verdict in zip(decisions, verdicts, strict=True)
    ]
    return Reliability(ids, meets, included, reasons, verdicts)


def answers_quality(answers: Answers) -> AnnotatorQuality:
    """Accuracy on gold and consensus agreement, over the labels that count (attention checks included)."""
    return annotator_quality(
        answers.labels(answers.counted), gold=answers.gold, tolerance=TOLERANCE, rounding="floor"
    )
