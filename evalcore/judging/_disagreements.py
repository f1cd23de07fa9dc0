"""Where an annotator disagrees: the items behind a kappa cell or an annotator's accuracy and consensus.

Two views, each over the same labels as the figure it explains, so the lists add up to what the
dashboard shows:

- `pair_disagreements(answers, a=..., b=...)`: the items both annotators labelled where their grades
  differ, over the labels of the kappa matrix (grades given in time, attention checks left out).
- `annotator_disagreements(answers, a=...)`: the items where annotator `a`'s grade differs from the
  reference: the gold label on gold items (attention checks included, as for accuracy on gold), else the
  median of the other annotators' labels, rounded down (as for agreement with the others).

Both are sorted by the size of the disagreement, largest first, then by task id; vectorised over the
project's answers (no loop over items).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from evalcore.agreement import LongLabels, gold_per_item, leave_one_out_medians
from evalcore.judging._answers import Answers
from evalcore.stats._validation import FloatArray, IntArray

Reference = Literal["annotator", "gold", "others"]


@dataclass(frozen=True)
class LabelDisagreements:
    """Aligned arrays, one entry per item where `a` disagrees: the task id, `a`'s grade, the grade it is
    compared with (`other`: b's grade, the gold label or the others' median) and what that grade is
    (`reference`, one per item). `others` maps each task id to the other annotators' labels on it
    (username -> grade; both `a` and `b` left out), for the reader to see every side."""

    task: IntArray
    grade: FloatArray
    other: FloatArray
    reference: list[Reference]
    others: dict[int, dict[str, int]]

    @property
    def gap(self) -> FloatArray:
        return np.abs(self.grade - self.other)

    def __len__(self) -> int:
        return int(self.task.size)


def _code(answers: Answers, user_id: int) -> int | None:
    position = int(np.searchsorted(answers.annotators, user_id))
    found = position < answers.annotators.size and int(answers.annotators[position]) == user_id
    return position if found else None


def _ordered(
    answers: Answers,
    labels: LongLabels,
    *,
    task: IntArray,
    grade: FloatArray,
    other: FloatArray,
    reference: list[Reference],
    exclude: set[int],
) -> LabelDisagreements:
    """The disagreements, aligned, ordered by the gap (largest first) then by task id, with the labels of
    every annotator not in `exclude` (annotator codes) on those tasks."""
    order = np.lexsort((task, -np.abs(grade - other))).astype(np.int64)
    task = task[order]
    return LabelDisagreements(
        task=task,
        grade=grade[order],
        other=other[order],
        reference=[reference[i] for i in order.tolist()],
        others=_others(answers, labels, task, exclude=exclude),
    )


def _others(
    answers: Answers, labels: LongLabels, tasks: IntArray, *, exclude: set[int]
) -> dict[int, dict[str, int]]:
    """The labels on `tasks` of every annotator not in `exclude` (annotator codes)."""
    item_ids = labels.items[labels.item]
    keep = np.isin(item_ids, tasks) & ~np.isin(labels.annotator, list(exclude))
    names = answers.names()
    out: dict[int, dict[str, int]] = {int(task): {} for task in tasks.tolist()}
    for task, annotator, value in zip(
        item_ids[keep].tolist(), labels.annotator[keep].tolist(), labels.value[keep].tolist(), strict=True
    ):
        out[int(task)][names[annotator]] = int(value)
    return out


def pair_disagreements(answers: Answers, *, a: int, b: int) -> LabelDisagreements:
    """Items where annotators `a` and `b` (user ids) both gave a label that counts, and the labels differ."""
    labels = answers.labels(answers.counted & ~answers.on_attention_check)
    code_a, code_b = _code(answers, a), _code(answers, b)
    if code_a is None or code_b is None or code_a == code_b:
        return _empty()
    mine, theirs = labels.annotator == code_a, labels.annotator == code_b
    shared, at_a, at_b = np.intersect1d(labels.item[mine], labels.item[theirs], return_indices=True)
    grade, other = labels.value[mine][at_a], labels.value[theirs][at_b]
    differ = grade != other
    task = labels.items[shared[differ]].astype(np.int64)
    return _ordered(
        answers, labels, task=task, grade=grade[differ], other=other[differ],
        reference=["annotator"] * int(task.size), exclude={code_a, code_b},
    )  # fmt: skip


def annotator_disagreements(answers: Answers, *, a: int) -> LabelDisagreements:
    """Items where annotator `a`'s label differs from the gold label, or (without gold) from the others'
    median label; items with neither are left out."""
    labels = answers.labels(answers.counted)
    code_a = _code(answers, a)
    if code_a is None:
        return _empty()
    consensus = leave_one_out_medians(labels, rounding="floor")
    gold = gold_per_item(labels, answers.gold)[labels.item]
    is_gold = ~np.isnan(gold)
    reference_grade = np.where(is_gold, gold, consensus)
    keep = (labels.annotator == code_a) & ~np.isnan(reference_grade) & (labels.value != reference_grade)
    task = labels.items[labels.item[keep]].astype(np.int64)
    return _ordered(
        answers, labels, task=task, grade=labels.value[keep], other=reference_grade[keep],
        reference=["gold" if g else "others" for g in is_gold[keep].tolist()], exclude={code_a},
    )  # fmt: skip


def _empty() -> LabelDisagreements:
    nothing = np.zeros(0)
    return LabelDisagreements(np.zeros(0, dtype=np.int64), nothing, nothing, [], {})
