"""The quality page's drill-down: the items where an annotator disagrees, read for one request.

`evalcore.judging.pair_disagreements` / `annotator_disagreements` do the work over the project's answers
(read in bulk by `quality.project_answers`); this module adds the pairs' query and document ids with one
more query for the rows shown. Unlike the dashboard's figures it reads the answers as they are now (a
lead drilling into a figure wants today's labels; one pass over the arrays is cheap).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.http import Http404

from annotations.models import Project, Task
from annotations.quality.services import project_answers, read_snapshot
from evalcore.judging import Answers, annotator_disagreements, pair_disagreements

#: The most rows a page lists (the largest disagreements come first).
MAX_ROWS = 500


@dataclass(frozen=True)
class DisagreementRow:
    """One (query, document) pair where annotator `a` disagrees: a's grade, the grade it is compared with
    (`other`, which is `reference`: "annotator" b, "gold" or the "others"' median) and every other
    annotator's label on the pair."""

    task_id: int
    is_gold: bool
    qid: str
    query: str
    doc_id: str
    document: str
    grade: int
    grade_label: str
    other: int
    other_label: str
    reference: str
    gap: int
    others: dict[str, int]


@dataclass(frozen=True)
class DisagreementList:
    a: str
    b: str | None
    #: Every annotator with a label that counts, (user id, username), for links to the other pairs.
    annotators: list[tuple[int, str]]
    rows: list[DisagreementRow]
    total: int
    compared: int

    @property
    def truncated(self) -> bool:
        return self.total > len(self.rows)


def _username(answers: Answers, user_id: int) -> str:
    if user_id not in set(answers.annotators.tolist()):
        raise Http404("No such annotator in this project.")
    return answers.username(user_id)


def disagreement_list(
    *, project: Project, a: int, b: int | None = None, limit: int | None = MAX_ROWS
) -> DisagreementList:
    """Where annotator `a` disagrees with `b`, or (without `b`) with gold and the others' consensus; the
    first `limit` rows (all of them when None: the CSV download).

    404 when `a` or `b` is not an annotator of the project (or has never answered in it).
    """
    with read_snapshot():
        answers = project_answers(project)
    name_a = _username(answers, a)
    name_b = _username(answers, b) if b is not None else None
    if b is not None and b == a:
        raise Http404("Choose two different annotators.")
    labels = {int(level["grade"]): str(level["label"]) for level in project.scale}
    found = pair_disagreements(answers, a=a, b=b) if b is not None else annotator_disagreements(answers, a=a)
    shown = (found.task if limit is None else found.task[:limit]).tolist()
    pairs = {
        pk: (qid, title, doc_id, doc_title, is_gold)
        for pk, qid, title, doc_id, doc_title, is_gold in Task.objects.filter(pk__in=shown).values_list(
            "pk", "topic__qid", "topic__title", "document__doc_id", "document__title", "is_gold"
        )
    }
    rows = [
        DisagreementRow(
            task_id=task,
            is_gold=pairs[task][4],
            qid=pairs[task][0],
            query=pairs[task][1],
            doc_id=pairs[task][2],
            document=pairs[task][3],
            grade=int(found.grade[i]),
            grade_label=labels.get(int(found.grade[i]), ""),
            other=int(found.other[i]),
            other_label=labels.get(int(found.other[i]), ""),
            reference=found.reference[i],
            gap=int(abs(found.grade[i] - found.other[i])),
            others=found.others.get(task, {}),
        )
        for i, task in enumerate(shown)
        if task in pairs
    ]
    return DisagreementList(
        a=name_a,
        b=name_b,
        annotators=[
            (user_id, answers.username(user_id))
            for user_id in np.unique(answers.annotator[answers.counted]).tolist()
        ],
        rows=rows,
        total=len(found),
        compared=_compared(answers, a=a, b=b),
    )


def _compared(answers: Answers, *, a: int, b: int | None) -> int:
    """How many items the list was drawn from (the page's "n of m"): the items both labelled (attention
    checks left out, as in the kappa matrix), or the items `a` labelled."""
    if b is None:
        return int(np.unique(answers.task[answers.counted & (answers.annotator == a)]).size)
    usable = answers.counted & ~answers.on_attention_check
    mine, theirs = (answers.task[usable & (answers.annotator == user)] for user in (a, b))
    return int(np.intersect1d(mine, theirs).size)


CSV_HEADER = ["qid", "query", "doc_id", "document", "is_gold", "annotator", "grade", "grade_label",
              "compared_with", "other", "other_label", "gap", "other_labels"]  # fmt: skip


def disagreement_table(found: DisagreementList) -> list[list[object]]:
    """The rows of the CSV download (`CSV_HEADER`): what the page's table shows, one pair a row.

    `compared_with` is annotator b's name, or "gold" or "others" (their median); `other_labels` is every
    other annotator's label on the pair, as `name grade` joined by "; "."""
    return [
        [row.qid, row.query, row.doc_id, row.document, row.is_gold, found.a, row.grade, row.grade_label,
         found.b if found.b is not None else row.reference, row.other, row.other_label, row.gap,
         "; ".join(f"{name} {grade}" for name, grade in row.others.items())]
        for row in found.rows
    ]  # fmt: skip
