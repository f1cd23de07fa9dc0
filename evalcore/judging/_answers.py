"""A judging project's answers as aligned arrays, and its (topic, document) pairs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalcore.agreement import LongLabels
from evalcore.stats._validation import BoolArray, FloatArray, IntArray


@dataclass(frozen=True, eq=False)
class Answers:
    """Every answer of a project as aligned arrays, one entry per answer.

    `task` and `annotator` are ids (the items and the raters); `grade` is NaN for skipped and unclear
    answers. `annotators` is the sorted ids of the project's annotators and of everyone who answered;
    `annotator_code` indexes it. `gold` maps a task id to its gold grade; `attention` is the sorted task
    ids of attention checks (gold items written to be obvious). `created_at` is kept only when a caller
    needs the answers' times (a qrels build's provenance). `grades` is the project's scale.
    """

    task: IntArray
    annotator: IntArray
    grade: FloatArray
    too_fast: BoolArray
    seconds: FloatArray
    created_at: NDArray[Any] | None
    annotators: IntArray
    annotator_code: IntArray
    usernames: Mapping[int, str]
    gold: Mapping[int, int]
    attention: IntArray
    grades: list[int]

    @classmethod
    def from_columns(
        cls,
        *,
        task: Sequence[int],
        annotator: Sequence[int],
        grade: Sequence[int | None],
        too_fast: Sequence[bool],
        seconds: Sequence[float],
        created_at: Sequence[Any] | None = None,
        members: Sequence[int] = (),
        usernames: Mapping[int, str] | None = None,
        gold: Mapping[int, int] | None = None,
        attention: Sequence[int] = (),
        grades: Sequence[int] = (0, 1, 2, 3, 4),
    ) -> Answers:
        """Build from plain columns (as read from a database), `None` grades meaning no grade.

        `members` are annotators of the project who may not have answered yet.
        """
        rater = np.asarray(annotator, dtype=np.int64)
        annotators = np.union1d(rater, np.asarray(members, dtype=np.int64)).astype(np.int64)
        return cls(
            task=np.asarray(task, dtype=np.int64),
            annotator=rater,
            grade=np.array([np.nan if g is None else g for g in grade], dtype=np.float64),
            too_fast=np.asarray(too_fast, dtype=np.bool_),
            seconds=np.asarray(seconds, dtype=np.float64),
            created_at=None if created_at is None else np.array(created_at, dtype=object),
            annotators=annotators,
            annotator_code=np.searchsorted(annotators, rater).astype(np.int64),
            usernames=dict(usernames or {}),
            gold=dict(gold or {}),
            attention=np.array(sorted(attention), dtype=np.int64),
            grades=[int(g) for g in grades],
        )

    @property
    def n_answers(self) -> int:
        return int(self.task.size)

    @property
    def graded(self) -> BoolArray:
        return ~np.isnan(self.grade)

    @property
    def counted(self) -> BoolArray:
        """The labels that count: a grade given in time."""
        return self.graded & ~self.too_fast

    @property
    def on_attention_check(self) -> BoolArray:
        return np.isin(self.task, self.attention)

    def labels(self, mask: BoolArray) -> LongLabels:
        """The graded answers where `mask` holds, items = their task ids, over all the annotators."""
        keep = mask & self.graded
        items, item_code = np.unique(self.task[keep], return_inverse=True)
        return LongLabels.from_codes(
            item_code.astype(np.int64),
            self.annotator_code[keep],
            self.grade[keep],
            items=items,
            annotators=self.annotators,
        )

    def username(self, user_id: int) -> str:
        return self.usernames.get(int(user_id), str(user_id))

    def names(self) -> list[str]:
        """The usernames of `annotators`, in order."""
        return [self.username(user_id) for user_id in self.annotators.tolist()]


@dataclass(frozen=True)
class Pairs:
    """The project's (topic, document) pairs: task ids (sorted) with their qid and doc_id."""

    task: IntArray
    qid: list[str]
    doc_id: list[str]

    @classmethod
    def from_rows(cls, rows: Sequence[tuple[int, str, str]]) -> Pairs:
        """From (task id, qid, doc_id) rows in any order."""
        ordered = sorted(rows)
        return cls(
            task=np.array([row[0] for row in ordered], dtype=np.int64),
            qid=[row[1] for row in ordered],
            doc_id=[row[2] for row in ordered],
        )
