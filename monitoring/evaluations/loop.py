"""The judging loop's services on a leaderboard (issue 23): judge a run's gaps, compute the coverage of
evaluations made before it was stored, and re-score a team when its judging project finishes a new qrels
version.

- `run_gaps_judge` adds the run's unjudged top-k pairs on a qrels source (`evalcore.coverage.unjudged_pairs`)
  to the judging project the source was built from, through `annotations.imports.pairs_add` (pairs whose
  topic or document the project lacks are skipped and counted; pairs already tasks are counted, not added).
  The command calls it; the web and the API queue the same work as a `GapsRequest` job
  (`gaps_request_create`), since reading a run of millions of lines must not hold a request.
- `qrels_build_rescore` creates the linked team's qrels source for a finished build and queues, for every
  evaluation done on the source of the version before, the same evaluation on the new one
  (`evaluation_create`: the same run, qrels and options find the same evaluation, so a re-delivered
  task adds nothing). `qrels_build_announced`, the receiver of `annotations.signals.qrels_build_done`
  (connected in `MonitoringConfig.ready`: `annotations` never imports `monitoring`), queues the task.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from django.db import transaction

from annotations.imports import pairs_add
from annotations.models import Project, ProjectMembership, QrelsBuild, Task
from evalcore.coverage import DEFAULT_GAP_DEPTH, unjudged_pairs
from evalplatform.auth import AnyUser, User
from evalplatform.errors import InputError
from evalplatform.jobs import (
    JobOutcome,
    JobStatus,
    ProgressFn,
    job_enqueue_on_commit,
    job_run,
    task_send_on_commit,
)
from evalplatform.models import TeamMembership
from monitoring.evaluations.selectors import leaderboard
from monitoring.evaluations.services import evaluation_create, read_qrels, read_run
from monitoring.files.uploads import qrels_source_for_build
from monitoring.models import Evaluation, GapsRequest, QrelsSource, Run
from monitoring.pooling.services import URGENT_PRIORITY

logger = logging.getLogger(__name__)

#: The deepest top k "judge the gaps" accepts (a run's depth in TREC-style runs).
MAX_GAP_DEPTH = 1000


# --- judging the gaps ---------------------------------------------------------------------------------


def may_judge_gaps(*, user: AnyUser, membership: TeamMembership, qrels: QrelsSource) -> bool:
    """Whether the user may add a run's gaps on `qrels` to its judging project: an editor of the team who
    leads the project the source was built from (a superuser stands as both)."""
    if qrels.build is None or not membership.can_edit or not user.is_authenticated:
        return False
    if getattr(user, "is_superuser", False):
        return True
    return ProjectMembership.objects.filter(
        project_id=qrels.build.project_id, user_id=user.pk, role=ProjectMembership.Role.LEAD
    ).exists()


@dataclass(frozen=True)
class GapsJudged:
    """What `run_gaps_judge` did: the unjudged pairs of the run's top `depth` and what became of them."""

    run: int
    qrels: int
    project: str
    depth: int
    unjudged: int
    created: int
    existing: int
    missing_topic: int
    missing_document: int
    #: The gaps' tasks given `URGENT_PRIORITY` (served before the project's pools' tasks).
    prioritised: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def gaps_check(*, run: Run, qrels: QrelsSource, depth: int) -> Project:
    """The judging project the run's gaps on `qrels` go to; `InputError` for uploaded qrels (no project to
    judge in), a run of another team or a depth out of range."""
    if qrels.build_id is None:
        raise InputError("These qrels were uploaded: there is no judging project to add the gaps to.")
    if run.team_id != qrels.team_id:
        raise InputError("The run and the qrels belong to different teams.")
    if not 1 <= depth <= MAX_GAP_DEPTH:
        raise InputError(f"Choose a depth between 1 and {MAX_GAP_DEPTH}.")
    assert qrels.build is not None
    return qrels.build.project


def gaps_find(*, run: Run, qrels: QrelsSource, depth: int) -> list[tuple[str, str]]:
    """The distinct unjudged (qid, docno) pairs of the run's top `depth` on `qrels` (reads both files)."""
    return unjudged_pairs(read_run(run), read_qrels(qrels), depth=depth)


def gaps_add(
    *, run: Run, qrels: QrelsSource, project: Project, depth: int, pairs: Sequence[tuple[str, str]]
) -> GapsJudged:
    """Add `pairs` to the project as tasks (idempotent) and serve them first where the project has pools."""
    added = pairs_add(project=project, pairs=pairs)
    urgent = gaps_prioritise(project=project, pairs=pairs)
    logger.info("gaps of run %s on qrels %s: %s", run.pk, qrels.pk, added)
    return GapsJudged(
        run=run.pk, qrels=qrels.pk, project=project.slug, depth=depth, unjudged=added.requested,
        created=added.created, existing=added.existing, missing_topic=added.missing_topic,
        missing_document=added.missing_document, prioritised=urgent,
    )  # fmt: skip


def run_gaps_judge(*, run: Run, qrels: QrelsSource, depth: int = DEFAULT_GAP_DEPTH) -> GapsJudged:
    """Add the run's unjudged top-`depth` pairs on `qrels` to the source's judging project as tasks, at
    once (the command's way; the web and the API queue a `GapsRequest` job instead).

    Raises `InputError` as `gaps_check` does. Idempotent: asking twice adds nothing the second time."""
    project = gaps_check(run=run, qrels=qrels, depth=depth)
    pairs = gaps_find(run=run, qrels=qrels, depth=depth)
    return gaps_add(run=run, qrels=qrels, project=project, depth=depth, pairs=pairs)


@transaction.atomic
def gaps_request_create(
    *, run: Run, qrels: QrelsSource, depth: int = DEFAULT_GAP_DEPTH, created_by: User | None = None
) -> GapsRequest:
    """A pending "judge the gaps" job, queued when the transaction commits; refuses what `gaps_check`
    refuses at once, before any file is read."""
    gaps_check(run=run, qrels=qrels, depth=depth)
    request = GapsRequest.objects.create(
        team_id=qrels.team_id, run=run, qrels=qrels, depth=depth, created_by=created_by
    )
    job_enqueue_on_commit(request)
    return request


def gaps_request_run(*, request_id: int) -> JobOutcome:
    """The task's one call: read the files without a lock, then add the tasks with the job's result, in
    the transaction that stores it (a job taken over by another worker adds nothing)."""
    return job_run(GapsRequest, pk=request_id, compute=_gaps_compute, store=_gaps_store)


def _gaps_compute(job: GapsRequest, progress: ProgressFn) -> list[tuple[str, str]]:
    progress(0.0, f"reading {job.run.name} and {job.qrels.name}")
    gaps_check(run=job.run, qrels=job.qrels, depth=job.depth)
    return gaps_find(run=job.run, qrels=job.qrels, depth=job.depth)


def _gaps_store(job: GapsRequest, pairs: list[tuple[str, str]]) -> None:
    project = gaps_check(run=job.run, qrels=job.qrels, depth=job.depth)
    job.result = gaps_add(
        run=job.run, qrels=job.qrels, project=project, depth=job.depth, pairs=pairs
    ).as_dict()


def gaps_requests_recent(*, qrels: QrelsSource, limit: int = 5) -> list[GapsRequest]:
    """The newest "judge the gaps" jobs on `qrels`, with their runs, for the leaderboard."""
    return list(
        GapsRequest.objects.filter(qrels=qrels).select_related("run").order_by("-created_at", "-pk")[:limit]
    )


@transaction.atomic
def gaps_prioritise(*, project: Project, pairs: Sequence[tuple[str, str]]) -> int:
    """In a project that serves by priority, give the pairs' tasks nobody started `URGENT_PRIORITY`;
    returns how many changed. The rows are locked in id order, skipping those a claim holds right now (as
    the pools' re-ordering does), so this never waits on a claim."""
    # Read afresh: the project a source's build carries may predate its first pool.
    if not pairs or not Project.objects.filter(pk=project.pk, has_priorities=True).exists():
        return 0
    wanted = set(pairs)
    rows = Task.objects.filter(
        project=project, is_gold=False, assigned_count=0, label_count=0,
        topic__qid__in={qid for qid, _ in wanted}, document__doc_id__in={doc for _, doc in wanted},
    ).exclude(priority=URGENT_PRIORITY)  # fmt: skip
    candidates = [
        pk
        for pk, qid, doc in rows.values_list("pk", "topic__qid", "document__doc_id")
        if (qid, doc) in wanted
    ]
    if not candidates:
        return 0
    ids = list(
        Task.objects.filter(pk__in=candidates, assigned_count=0)
        .order_by("pk")
        .select_for_update(skip_locked=True)
        .values_list("pk", flat=True)
    )
    return Task.objects.filter(pk__in=ids).update(priority=URGENT_PRIORITY)


# --- coverage for evaluations made before it was stored ----------------------------------------------


@transaction.atomic
def leaderboard_coverage_compute(*, qrels: QrelsSource, created_by: User | None = None) -> list[Evaluation]:
    """For each run on the leaderboard whose evaluation predates coverage, the same evaluation with the
    coverage measures added (`evaluation_create`), queued on commit; once done it is the run's newest and
    the leaderboard shows its coverage. Idempotent: asking again finds the same evaluations."""
    stale = [row.evaluation for row in leaderboard(qrels=qrels).rows if not row.coverage.computed]
    return [
        evaluation_create(
            run=evaluation.run,
            qrels=qrels,
            measures=evaluation.measures,
            rel_level=evaluation.rel_level,
            complete=evaluation.complete,
            created_by=created_by,
        )  # fmt: skip
        for evaluation in stale
    ]


# --- re-scoring on a new version ----------------------------------------------------------------------


def previous_source(source: QrelsSource) -> QrelsSource | None:
    """The team's source of the newest earlier done build of the same project (None for a first version
    or an uploaded file)."""
    if source.build is None:
        return None
    return (
        QrelsSource.objects.filter(
            team_id=source.team_id,
            build__project_id=source.build.project_id,
            build__version__lt=source.build.version,
            build__status=JobStatus.DONE,
        )
        .select_related("team", "build__project")
        .order_by("-build__version")
        .first()
    )


@transaction.atomic
def qrels_build_rescore(*, build_id: int, enqueue: bool = True) -> list[Evaluation]:
    """For a done build of a project linked to a team: the team's source for it, and the same evaluations
    as on the source of the version before, queued on commit (unless `enqueue` is False: the caller runs
    them, as the demo does). Returns the evaluations (new or found)."""
    build = QrelsBuild.objects.select_related("project__team").filter(pk=build_id).first()
    if build is None or build.status != JobStatus.DONE or build.project.team is None:
        return []
    source = qrels_source_for_build(team=build.project.team, build=build)
    before = previous_source(source)
    if before is None:
        return []
    done = (
        Evaluation.objects.filter(qrels=before, status=JobStatus.DONE)
        .select_related("run")
        .defer("per_query", "qids")
        .order_by("run_id", "pk")
    )
    return [
        evaluation_create(
            run=evaluation.run,
            qrels=source,
            measures=evaluation.measures,
            rel_level=evaluation.rel_level,
            complete=evaluation.complete,
            enqueue=enqueue,
        )  # fmt: skip
        for evaluation in done
    ]


def qrels_build_announced(*, build_id: int, **kwargs: Any) -> None:
    """`annotations.signals.qrels_build_done`'s receiver: queue the re-scoring once committed. A broker
    that is down loses this re-scoring only (logged), never the build."""
    from monitoring.tasks import qrels_build_rescore as task

    task_send_on_commit(task, (build_id,), what=f"the re-scoring after qrels build {build_id}")
