"""People where the machine is doubtful: which of a judge's pairs go to the judging or adjudication queue.

`route_select` decides from plain data (testable by a direct loop); `judge_route` reads the project,
records each routed pair as a `MachineRouting` (its reason and the figures behind it) and makes the
judging-queue pairs tasks with `annotations.imports.pairs_add`.

The rule, one reason per pair, in this order of priority:

1. `humans_disagree`: people already disagree on the pair (a qrels build would drop it for disagreement,
   and no adjudication settled it): it goes to the adjudication queue (where it already waits), not to
   more annotators.
2. `disagrees`: people judged the pair (the human consensus build, or gold) and the machine's grade
   differs.
3. `low_confidence`: no human judgment, and the judge's confidence is below `confidence_below`.
4. `weak_topic`: no human judgment, in a topic whose exact agreement with people is below
   `topic_agreement_below` (over the pairs both graded).

A judging-queue pair that is not a task becomes one (`annotations.imports.pairs_add`). One that is an
ordinary task with answers already gets one more required judgment: its `extra_places` grows by one, so
that claims serve it to one more annotator (first, before other tasks) beyond the project's overlap. A
task with no answer yet needs nothing more: its overlap's judgments are still to come.

Within a reason, the least confident first, then by (qid, doc_id). At most `budget` pairs are routed for
these reasons over all the judge's routings. Then a random sample (numpy's generator seeded with `seed`)
of `sample_share` of the judge's other pairs that people have not judged (rounded), so that the pairs
people see are not only the doubtful ones and the calibration stays unbiased; the sample is outside the
budget. Routing again with the same parameters and data routes nothing more: earlier routings count
against the budget and the sample.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

import numpy as np
from django.db import transaction
from django.db.models import F

from annotations.adjudication.services import project_dropped_pairs, queue_params
from annotations.imports import pairs_add
from annotations.machine_judges.services import (
    JudgeLabels,
    Pair,
    calibration_against,
    consensus_build,
    consensus_grades,
    gold_grades,
    judge_labels,
)
from annotations.models import Adjudication, MachineJudge, MachineRouting, Project, Task
from annotations.selectors import open_totals_forget
from evalplatform.auth import User

Reason = MachineRouting.Reason
Queue = MachineRouting.Queue
#: The targeted reasons in their order of priority.
TARGETED = (Reason.HUMANS_DISAGREE, Reason.DISAGREES, Reason.LOW_CONFIDENCE, Reason.WEAK_TOPIC)


@dataclass(frozen=True)
class RouteParams:
    budget: int = 100
    confidence_below: float = 0.5
    topic_agreement_below: float = 0.5
    sample_share: float = 0.05
    seed: int = 0

    def __post_init__(self) -> None:
        if self.budget < 0:
            raise ValueError("budget must be 0 or more")
        if not 0 <= self.confidence_below <= 1 or not 0 <= self.topic_agreement_below <= 1:
            raise ValueError("thresholds are between 0 and 1")
        if not 0 <= self.sample_share <= 1:
            raise ValueError("sample_share is between 0 and 1")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Routed:
    pair: Pair
    reason: str
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def queue(self) -> str:
        return Queue.ADJUDICATION if self.reason == Reason.HUMANS_DISAGREE else Queue.JUDGING


def _member(pairs: list[Pair], keys: Any) -> np.ndarray:
    return np.fromiter((pair in keys for pair in pairs), dtype=bool, count=len(pairs))


def route_select(
    labels: JudgeLabels,
    *,
    human: dict[Pair, int],
    humans_disagree: set[Pair],
    topic_agreement: dict[str, float],
    routed: dict[Pair, str],
    params: RouteParams,
) -> list[Routed]:
    """The pairs to route now (see the module docstring); `routed` holds the earlier routings' reasons.

    One pass builds boolean masks (a set lookup per pair); the reasons, their order and the sample are
    array operations."""
    pairs, grades, confidence = labels.pairs, labels.grades, labels.confidence
    n = len(pairs)
    disagree = _member(pairs, humans_disagree)
    judged = _member(pairs, human)
    human_grade = np.fromiter((human.get(pair, -1) for pair in pairs), dtype=np.int64, count=n)
    weak = {t for t, a in topic_agreement.items() if math.isfinite(a) and a < params.topic_agreement_below}
    in_weak = np.fromiter((pair[0] in weak for pair in pairs), dtype=bool, count=n)
    unsure = np.isfinite(confidence) & (confidence < params.confidence_below)
    reason = np.select(
        [disagree, judged & (human_grade != grades), judged, unsure, in_weak],
        [0, 1, -1, 2, 3],
        default=-1,
    )
    rank_confidence = np.where(np.isfinite(confidence), confidence, np.inf)
    done = _member(pairs, routed)
    # By reason, then the least confident, then by (qid, doc_id) in code point order (not the database's
    # collation, so the choice is the same on any database).
    pair_rank = np.empty(n, dtype=np.int64)
    pair_rank[sorted(range(n), key=pairs.__getitem__)] = np.arange(n)
    order = np.lexsort((pair_rank, rank_confidence, reason))
    order = order[(reason[order] >= 0) & ~done[order]]
    room = max(params.budget - sum(1 for r in routed.values() if r != Reason.SAMPLE), 0)
    chosen = [_routed(pairs[i], int(reason[i]), i, labels, human) for i in order[:room].tolist()]
    rest = np.flatnonzero((reason < 0) & ~judged)
    wanted = round(params.sample_share * rest.size) - sum(1 for r in routed.values() if r == Reason.SAMPLE)
    pool = rest[~done[rest]]
    drawn = pool[np.random.default_rng(params.seed).permutation(pool.size)[: max(wanted, 0)]]
    return chosen + [Routed(pairs[i], Reason.SAMPLE, {"seed": params.seed}) for i in drawn.tolist()]


def _routed(pair: Pair, code: int, i: int, labels: JudgeLabels, human: dict[Pair, int]) -> Routed:
    """A targeted pair with the figures behind its reason."""
    reason = TARGETED[code]
    detail: dict[str, Any] = {}
    confidence = float(labels.confidence[i])
    if reason == Reason.DISAGREES:
        detail = {"human": human[pair], "machine": int(labels.grades[i])}
    elif reason == Reason.LOW_CONFIDENCE:
        detail = {"confidence": confidence}
    elif reason == Reason.WEAK_TOPIC:
        detail = {"topic": pair[0]}
    if reason != Reason.LOW_CONFIDENCE and math.isfinite(confidence):
        detail["confidence"] = confidence
    return Routed(pair, reason, detail)


@dataclass(frozen=True)
class RoutingDone:
    routed: dict[str, int]  # by reason, this time
    tasks_created: int
    tasks_existing: int
    already_routed: int
    judgments_added: int  # tasks with answers already that got one more required judgment
    params: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def total(self) -> int:
        return sum(self.routed.values())


def humans_disagree_pairs(judge: MachineJudge) -> set[Pair]:
    """The project's pairs a build would drop for people's disagreement, not yet adjudicated."""
    project = judge.project
    params, _ = queue_params(project)
    dropped = project_dropped_pairs(project, params).task.tolist()
    settled = set(
        Adjudication.objects.filter(project=project, task_id__in=dropped).values_list("task_id", flat=True)
    )
    rows = Task.objects.filter(pk__in=[t for t in dropped if t not in settled]).values_list(
        "topic__qid", "document__doc_id"
    )
    return set(rows)


def judge_route(*, judge: MachineJudge, params: RouteParams, by: User | None = None) -> RoutingDone:
    """Route the judge's doubtful pairs and a random sample of the rest to people; record why."""
    project = judge.project
    labels = judge_labels(judge)
    human = {**consensus_grades(consensus_build(project)), **gold_grades(project)}
    report = calibration_against(labels, human)
    agreement = (
        dict(zip(map(str, report.per_topic.topics), report.per_topic.exact_agreement.tolist(), strict=True))
        if report is not None and report.per_topic is not None
        else {}
    )
    with transaction.atomic():
        MachineJudge.objects.select_for_update().filter(
            pk=judge.pk
        ).first()  # one routing at a time per judge
        existing = {
            (qid, doc_id): reason
            for qid, doc_id, reason in MachineRouting.objects.filter(judge=judge).values_list(
                "topic__qid", "document__doc_id", "reason"
            )
        }
        chosen = route_select(
            labels, human=human, humans_disagree=humans_disagree_pairs(judge), topic_agreement=agreement,
            routed=existing, params=params,
        )  # fmt: skip
        topics = dict(project.topics.values_list("qid", "id"))
        documents = dict(
            project.documents.filter(doc_id__in=[r.pair[1] for r in chosen]).values_list("doc_id", "id")
        )
        MachineRouting.objects.bulk_create(
            [
                MachineRouting(
                    judge=judge,
                    topic_id=topics[r.pair[0]],
                    document_id=documents[r.pair[1]],
                    reason=r.reason,
                    queue=r.queue,
                    detail={**r.detail, "params": params.as_dict()},
                    routed_by=by,
                )  # fmt: skip
                for r in chosen
            ]
        )
        judging = [r.pair for r in chosen if r.queue == Queue.JUDGING]
        answered = _answered_tasks(project, judging, topics, documents)
        added = pairs_add(project=project, pairs=judging)
        more = Task.objects.filter(pk__in=answered).update(extra_places=F("extra_places") + 1)
        if more:
            Project.objects.filter(pk=project.pk, has_extra_places=False).update(has_extra_places=True)
            transaction.on_commit(partial(open_totals_forget, project))
    counts = {reason.value: 0 for reason in (*TARGETED, Reason.SAMPLE)}
    for r in chosen:
        counts[r.reason] += 1
    return RoutingDone(
        routed=counts, tasks_created=added.created, tasks_existing=added.existing,
        already_routed=len(existing), judgments_added=more, params=params.as_dict(),
    )  # fmt: skip


def _answered_tasks(
    project: Project, pairs: list[Pair], topics: dict[str, int], documents: dict[str, int]
) -> list[int]:
    """The ordinary tasks among the pairs that have answers already."""
    keys = {
        (topics[qid], documents[doc_id]) for qid, doc_id in pairs if qid in topics and doc_id in documents
    }
    if not keys:
        return []
    rows = Task.objects.filter(
        project=project, is_gold=False, label_count__gt=0, topic_id__in={t for t, _ in keys},
        document_id__in={d for _, d in keys},
    ).values_list("pk", "topic_id", "document_id")  # fmt: skip
    return [pk for pk, topic, document in rows if (topic, document) in keys]
