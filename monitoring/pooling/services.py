"""Pools built from runs: create one, build it (a job), and re-order its pending tasks as answers arrive.

`pool_create` checks the request and queues the build on commit. The build (`pool_build_run`, the task's
one call) reads the runs, pools their top `depth` per topic over the project's topics
(`evalcore.pooling.candidates_from_runs`), leaves out the candidates whose document the project lacks
(counted in `skipped_missing`), replays every strategy on the runs with the team's newest qrels of the
project as the oracle for the planner (`planner.simulation_compute`), and materialises the order
(`_materialise`).

Materialising an order: the pool's history is replayed (`pool_history`: the pool's pairs that have a
counted answer, in the order of their first one, relevant when their mean counted grade reaches
`rel_level`), `evalcore.pooling.pool_order` gives the pairs still to judge within the budget, and

- the pairs that have no task get one (bulk, idempotent under the unique (project, topic, document)
  constraint; a task the project had is reused and linked, never duplicated);
- each wanted task nobody started gets the priority `judged + its position` (claims serve prioritised
  fresh tasks first, lowest first); the update is one statement over the tasks whose priority changed;
  a task with a negative priority (`URGENT_PRIORITY`: a run's gaps, asked for from the leaderboard) keeps
  it and is never dropped: it is served before every pool's tasks;
- the pool's pending tasks that left the budgeted order lose their priority, and those the pool created
  that nobody holds or answered are deleted (locked first, SKIP LOCKED: a claim in flight keeps its task);
- a spent budget ends the pool (`done`).

Re-ordering (`PoolReprioritise`): `annotations.hooks` calls `pool_answers_changed` after an answer
commits in a project with priorities. It asks for a re-prioritisation of each judging pool of the project:
one read gives the live pools and when their pending job, if any, was created; a pool without one gets
it, sent `DEBOUNCE_SECONDS` later (the one-pending constraint settles two processes that race); a pool
with one joins it without a write. Then the process does not ask the database again for
`JOIN_MEMO_SECONDS`, and never past a second before any of those jobs starts, so they read the answers
it passed over. The job replays the answers, materialises the new order (reading the pool's links and
their tasks' state once, and writing only the priorities that change), refreshes the counters and the
yield curve, and asks again if answers newer than those it read arrived meanwhile. Nothing of this
runs in the request. The same candidates, parameters and answers give the same order (`pool_order` is
deterministic), so re-running a job changes nothing.

One pool at a time: a project's pools would write the same `Task.priority`, so `pool_create` refuses a
pool while another of the project is building or judging (`ordering_pool`, under the project's row
lock); a pool whose budget is spent, that failed, or that was deleted (`pool_delete`) lets the next one
in. A finished pool's re-ordering while another pool of the project builds or judges only follows the
answers (`_follow`): it stays done (even when an undo brought it under its budget) and gives no priority.
Serving by priority ends with the pools: `project_priorities_settle` clears `Project.has_priorities`
once no unanswered task of the project has a priority (after each re-ordering and build, and after a
deletion), so the claim goes back to its plain path.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import IntegrityError, transaction
from django.db.models import Avg, Exists, Max, Min, OuterRef, Subquery
from django.utils import timezone

from annotations.models import Annotation, Assignment, Document, Project, Task, Topic
from evalcore.pooling import PoolCandidates, PoolParams, candidates_from_runs, pool_order
from evalplatform import sqlrows
from evalplatform.auth import User
from evalplatform.errors import InputError
from evalplatform.jobs import (
    JobOutcome,
    JobStatus,
    ProgressFn,
    job_enqueue,
    job_enqueue_on_commit,
    job_run,
)
from monitoring.evaluations.services import read_run
from monitoring.files.models import Run
from monitoring.pooling.models import JudgingPool, PoolReprioritise, PoolTask
from monitoring.pooling.planner import simulation_compute, simulation_measure_check

Stage = JudgingPool.Stage
logger = logging.getLogger(__name__)

#: The build's and the re-prioritisation's hard time limit on the worker.
TIME_LIMIT = 30 * 60
#: How long after the first answer a re-prioritisation waits, gathering the answers that follow.
DEBOUNCE_SECONDS = 5.0
#: After asking, a process joins the pending job without asking the database again for this long, and
#: at most until JOIN_MARGIN_SECONDS before the job starts (for the clocks of the processes to differ).
JOIN_MEMO_SECONDS = 2.0
JOIN_MARGIN_SECONDS = 1.0
TASK = Task._meta.db_table
#: The stages whose pools follow the answers (a built pool; once its budget is spent, its figures still do).
LIVE = (Stage.JUDGING, Stage.DONE)
#: The stages of a pool whose order decides the project's priorities (one such pool per project).
ORDERING = (Stage.BUILDING, Stage.JUDGING)
#: The most runs one pool reads.
MAX_RUNS = 100
#: The priority of tasks asked for outside any pool's order ("judge the gaps" of a leaderboard run):
#: below every pool's (theirs start at 0), so claims serve them first; pools never change or drop them.
URGENT_PRIORITY = -1

#: Project id -> until when this process takes a pending re-prioritisation as asked for (monotonic).
_joined: dict[int, float] = {}


# --- creating -------------------------------------------------------------------------------------------


@transaction.atomic
def pool_create(
    *,
    project: Project,
    runs: Sequence[Run],
    strategy: str,
    budget: int | None,
    depth: int = 100,
    seed: int = 0,
    rrf_k: int = 60,
    rbp_p: float = 0.8,
    rel_level: int = 1,
    simulation_measure: str = "map",
    created_by: User | None = None,
    enqueue: bool = True,
) -> JudgingPool:
    """A new pool of `project` from `runs` (its linked team's), its build queued on commit; its simulation
    ranks the runs by `simulation_measure` (`planner.simulation_measure_check`).

    InputError when the project has no team, a run is another team's, or the parameters are impossible."""
    if project.team_id is None:
        raise InputError("Link the project to a team first: a pool is built from that team's runs.")
    runs = list(dict.fromkeys(runs))
    if not runs:
        raise InputError("Choose at least one run.")
    if len(runs) > MAX_RUNS:
        raise InputError(f"Choose at most {MAX_RUNS} runs.")
    if any(run.team_id != project.team_id for run in runs):
        raise InputError("Every run must be one of the project's team's runs.")
    try:
        PoolParams(strategy, budget=budget, depth=depth, seed=seed, rrf_k=rrf_k, rbp_p=rbp_p)
    except ValueError as error:
        raise InputError(str(error)) from None
    simulation_measure = simulation_measure_check(simulation_measure)
    if rel_level < 0 or rel_level not in range(max(project.grades, default=0) + 1):
        raise InputError(
            f"rel_level must be one of the project's grades ({', '.join(map(str, project.grades))})."
        )
    # The project's row, locked (no key: answers still reference it) so that two creations take turns.
    Project.objects.select_for_update(no_key=True).filter(pk=project.pk).first()
    other = ordering_pool(project_id=project.pk)
    if other is not None:
        raise InputError(
            f"Pool #{other.pk} ({other.strategy}) of this project is still {other.phase_label.lower()}: a "
            "project judges one pool at a time, since a pool's order decides which of its tasks are served "
            "first. Wait until its budget is spent, or delete it, then create this one."
        )
    pool = JudgingPool.objects.create(
        team_id=project.team_id, project=project, strategy=strategy, budget=budget, depth=depth, seed=seed,
        rrf_k=rrf_k, rbp_p=rbp_p, rel_level=rel_level, simulation_measure=simulation_measure,
        created_by=created_by,
    )  # fmt: skip
    pool.runs.set(runs)
    if enqueue:
        job_enqueue_on_commit(pool)
    return pool


def ordering_pool(*, project_id: int) -> JudgingPool | None:
    """The project's pool whose order decides its priorities now: building or judging, not failed."""
    return (
        JudgingPool.objects.filter(project_id=project_id, stage__in=ORDERING)
        .exclude(status=JobStatus.FAILED)
        .defer("candidates")
        .order_by("pk")
        .first()
    )


# --- ending ---------------------------------------------------------------------------------------------


@transaction.atomic
def pool_delete(*, pool: JudgingPool) -> int:
    """Delete the pool: the tasks it created that nobody holds or answered go with it, its other
    unanswered tasks lose their place in its order (the answered ones, and their answers, stay). Without
    another pool in the project, the gaps asked for from a leaderboard lose their urgency too (they stay
    tasks, served in the ordinary order). Then the project serves by priority only while some unanswered
    task still has one (`project_priorities_settle`). Returns how many tasks were deleted."""
    # In a re-ordering's lock order (its job row, then the pool's: `job_finish` then `_reprioritise_store`),
    # so that deleting its job with the pool never deadlocks with it; never beside a materialisation.
    list(
        PoolReprioritise.objects.select_for_update().filter(pool_id=pool.pk).order_by("pk").values_list("pk")
    )
    locked = JudgingPool.objects.select_for_update(of=("self",)).defer("candidates").get(pk=pool.pk)
    deleted = len(_dropped_delete(locked, _links_read(locked).state, keep=set()))
    others = JudgingPool.objects.filter(project_id=locked.project_id).exclude(pk=locked.pk).exists()
    rows = Task.objects.filter(project_id=locked.project_id, label_count=0, priority__isnull=False)
    rows = rows.filter(pool_links__pool=locked).exclude(priority__lt=0) if others else rows
    _priorities_clear(rows)
    locked.delete()
    project_priorities_settle(project_id=locked.project_id)
    return deleted


def _priorities_clear(rows: Any) -> int:
    """Take the priority from `rows`, locked in id order first and skipping those a claim holds right now
    (as the re-ordering does: never waiting on a claim, so never deadlocking with one). A skipped task is
    being taken: it is answered, or handed back with its priority until the next settle."""
    ids = list(
        rows.order_by("pk").select_for_update(skip_locked=True, of=("self",)).values_list("pk", flat=True)
    )
    return Task.objects.filter(pk__in=ids).update(priority=None) if ids else 0


def project_priorities_settle(*, project_id: int) -> bool:
    """Clear `Project.has_priorities` once no unanswered ordinary task of the project has a priority, so
    that claims take their plain path again; True when it was cleared. One conditional statement: a pool
    that sets priorities meanwhile sets the flag again at its next materialisation."""
    pending = Task.objects.filter(
        project=OuterRef("pk"), priority__isnull=False, is_gold=False, label_count=0
    )
    cleared = (
        Project.objects.filter(pk=project_id, has_priorities=True)
        .exclude(Exists(pending))
        .update(has_priorities=False)
    )
    return bool(cleared)


# --- building -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Built:
    candidates: PoolCandidates
    skipped_missing: int
    #: The planner's simulation (`planner.simulation_compute`).
    simulation: dict[str, Any]


def pool_build_run(*, pool_id: int) -> JobOutcome:
    """The build job: read the runs, pool them, materialise the order (see the module docstring)."""
    return job_run(JudgingPool, pk=pool_id, compute=_build_compute, store=_build_store)


def _build_compute(pool: JudgingPool, progress: ProgressFn) -> Built:
    runs = list(pool.runs.order_by("pk"))
    data = []
    for number, run in enumerate(runs, start=1):
        progress(0.5 * (number - 1) / (len(runs) + 1), f"Reading run {number} of {len(runs)}: {run.name}")
        data.append(read_run(run))
    progress(0.5 * len(runs) / (len(runs) + 1), "Pooling the runs")
    qids = set(Topic.objects.filter(project=pool.project_id).values_list("qid", flat=True))
    pooled = candidates_from_runs(data, depth=pool.depth, names=run_names(runs), qids=qids)
    docnos = set(pooled.docnos)
    present = set(
        Document.objects.filter(project=pool.project_id, doc_id__in=docnos).values_list("doc_id", flat=True)
    )
    keep = np.array([docno in present for docno in pooled.docnos], dtype=bool)
    candidates = candidates_subset(pooled, keep)
    pool.candidates_count = len(candidates)
    # The planner's simulation is an extra: its failure (an empty or unreadable oracle) never fails the build.
    try:
        simulation = simulation_compute(pool, lambda done, note: progress(0.5 + 0.5 * (done or 0.0), note))
    except Exception as error:
        logger.warning("pool %s: simulation failed: %s", pool.pk, error)
        simulation = {"reason": f"The simulation failed: {error}"}
    return Built(candidates, int((~keep).sum()), simulation)


def run_names(runs: Sequence[Run]) -> list[str]:
    """One distinct name per run: its name, with its id where another run has the same."""
    names = [run.name for run in runs]
    return [
        name if names.count(name) == 1 else f"{name} #{run.pk}" for name, run in zip(names, runs, strict=True)
    ]


def candidates_subset(candidates: PoolCandidates, keep: np.ndarray) -> PoolCandidates:
    """The candidates where `keep` is true, with their hits (each run's ranks stay as the run gave them:
    a document the project lacks is left out, not ranked past)."""
    if keep.all():
        return candidates
    new_index = np.cumsum(keep) - 1
    hits = keep[candidates.hit_candidate]
    return PoolCandidates(
        candidates.qids,
        candidates.run_names,
        candidates.query[keep].astype(np.int32),
        tuple(docno for docno, kept in zip(candidates.docnos, keep.tolist(), strict=True) if kept),
        candidates.hit_run[hits].astype(np.int32),
        new_index[candidates.hit_candidate[hits]].astype(np.int64),
        candidates.hit_rank[hits].astype(np.int32),
        candidates.depth,
    )


def _build_store(pool: JudgingPool, built: Built) -> None:
    pool.candidates = built.candidates.to_bytes()
    pool.candidates_count = len(built.candidates)
    pool.skipped_missing = built.skipped_missing
    pool.simulation = built.simulation
    history = pool_history(pool, built.candidates)
    done = _materialise(pool, built.candidates, history)
    pool.tasks_created, pool.tasks_reused = done.created, done.reused
    pool.save()


# --- the answers so far ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class History:
    """The pool's judged pairs: (candidate index, relevant) in the order of their first counted answer."""

    judged: list[tuple[int, bool]]
    #: The newest answer of the project read (0: none).
    answers_seen: int


def pool_history(pool: JudgingPool, candidates: PoolCandidates) -> History:
    """Replay the project's counted answers onto the pool's candidates (see the module docstring)."""
    rows = (
        Annotation.objects.filter(project=pool.project_id, grade__isnull=False, too_fast=False)
        .values("task_id", "task__topic__qid", "task__document__doc_id")
        .annotate(first=Min("created_at"), first_id=Min("id"), mean=Avg("grade"))
        .order_by("first", "first_id")
    )
    judged = []
    for row in rows:
        index = candidates.index_of(row["task__topic__qid"], row["task__document__doc_id"])
        if index is not None:
            judged.append((index, float(row["mean"]) >= pool.rel_level))
    seen = Annotation.objects.filter(project=pool.project_id).aggregate(newest=Max("id"))["newest"]
    return History(judged, int(seen or 0))


# --- materialising an order -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Materialised:
    created: int
    reused: int
    changed: int
    deleted: int


def _materialise(pool: JudgingPool, candidates: PoolCandidates, history: History) -> Materialised:
    """Make the project's tasks follow the order `history` leads to (in the caller's transaction).

    The pool's links and their tasks' state are read once (`_links_read`); only candidates without a
    link are looked up by pair (`_tasks_for`), and only tasks whose priority changes are written."""
    order = pool_order(candidates, pool.params, history.judged)
    base = len(history.judged)
    wanted = {int(index): base + position for position, index in enumerate(order.tolist())}
    judged = {index for index, _ in history.judged}
    links = _links_read(pool)
    tasks = {index: links.task[index] for index in (*wanted, *judged) if index in links.task}
    unlinked = [index for index in (*wanted, *judged) if index not in links.task]
    found, created = _tasks_for(pool, candidates, unlinked)
    new_links = {index: task_id for index, task_id in found.items() if task_id not in links.state}
    PoolTask.objects.bulk_create(
        [
            PoolTask(pool=pool, task_id=task_id, candidate=index, created=task_id in created)
            for index, task_id in new_links.items()
        ],
        ignore_conflicts=True,
    )
    tasks.update(found)
    state = {**links.state, **_tasks_state(pool, new_links.values())}
    desired = {tasks[index]: priority for index, priority in wanted.items()}
    changed = _priorities_set(desired, state)
    deleted = _dropped_delete(pool, state, keep=set(desired) | {tasks[index] for index in judged})
    Project.objects.filter(pk=pool.project_id, has_priorities=False).update(has_priorities=True)
    spent = pool.budget is not None and base >= pool.budget
    pool.stage = Stage.DONE if spent else Stage.JUDGING
    _counters_refresh(pool, history, pending=sum(row.labels == 0 for row in state.values()) - len(deleted))
    return Materialised(len(created), max(0, len(new_links) - len(created)), changed, len(deleted))


@dataclass(frozen=True)
class TaskState:
    """What the re-ordering reads of a pool's task, as it stood when read."""

    priority: int | None
    assigned: int
    labels: int
    #: The pool created the task (only such are deleted when they leave the order).
    created: bool

    @property
    def fresh(self) -> bool:
        """Nobody holds or answered it, and it is not urgent: the pool orders it."""
        return (
            self.assigned == 0 and self.labels == 0 and not (self.priority is not None and self.priority < 0)
        )


@dataclass(frozen=True)
class Links:
    #: Candidate index -> task id.
    task: dict[int, int]
    #: Task id -> its state.
    state: dict[int, TaskState]


def _links_read(pool: JudgingPool) -> Links:
    """The pool's links with their tasks' state: one read of the pool's range of the links and the tasks
    by key (no ordering: Task's default one would join the project and the topic to sort)."""
    rows = (
        PoolTask.objects.filter(pool=pool)
        .order_by()
        .values_list("candidate", "task_id", "task__priority", "task__assigned_count", "task__label_count",
                     "created")
    )  # fmt: skip
    task, state = {}, {}
    for candidate, task_id, priority, assigned, labels, created in rows:
        task[candidate] = task_id
        state[task_id] = TaskState(priority, assigned, labels, created)
    return Links(task, state)


def _tasks_state(pool: JudgingPool, task_ids: Any) -> dict[int, TaskState]:
    """The state of tasks the pool has just linked (`created` from their new links)."""
    ids = list(task_ids)
    if not ids:
        return {}
    rows = (
        PoolTask.objects.filter(pool=pool, task_id__in=ids)
        .order_by()
        .values_list("task_id", "task__priority", "task__assigned_count", "task__label_count", "created")
    )
    return {
        task_id: TaskState(priority, assigned, labels, created)
        for task_id, priority, assigned, labels, created in rows
    }


def _tasks_for(
    pool: JudgingPool, candidates: PoolCandidates, indices: Sequence[int]
) -> tuple[dict[int, int], set[int]]:
    """Candidate index -> task id for `indices`, creating the missing tasks; and the ids created."""
    if not indices:
        return {}, set()
    topics = dict(Topic.objects.filter(project=pool.project_id).order_by().values_list("qid", "pk"))
    docnos = {candidates.docnos[index] for index in indices}
    documents = dict(
        Document.objects.filter(project=pool.project_id, doc_id__in=docnos)
        .order_by()
        .values_list("doc_id", "pk")
    )
    pairs = {}
    for index in indices:
        qid, docno = candidates.pair(index)
        if qid in topics and docno in documents:  # both were there when the pool was built
            pairs[index] = (topics[qid], documents[docno])

    def existing() -> dict[tuple[int, int], int]:
        rows = Task.objects.filter(
            project=pool.project_id, document_id__in=set(documents.values())
        ).order_by()
        return {
            (topic, document): pk for pk, topic, document in rows.values_list("pk", "topic_id", "document_id")
        }

    before = existing()
    missing = [pair for pair in pairs.values() if pair not in before]
    if missing:
        Task.objects.bulk_create(
            [
                Task(project_id=pool.project_id, topic_id=topic, document_id=document)
                for topic, document in missing
            ],
            ignore_conflicts=True,
            batch_size=1000,
        )
    after = existing() if missing else before
    created = {after[pair] for pair in missing if pair in after}
    return {index: after[pair] for index, pair in pairs.items() if pair in after}, created


def _priorities_set(desired: dict[int, int], state: dict[int, TaskState]) -> int:
    """Give the wanted tasks nobody started their priority, and take it from the pool's other tasks nobody
    started (`state`: the pool's tasks as read): one statement over the tasks whose priority changes.
    Returns how many.

    The statement locks its rows in id order and skips those another transaction holds (a claim taking
    the task right now: it is started, so its priority no longer matters), so it never waits on a claim;
    it re-checks that nobody holds the task. Updated in the order `unnest` gives, it deadlocked with
    claims that held one task while waiting for another; a skipped row is brought up to date by the next
    re-prioritisation."""
    changes = {
        pk: desired.get(pk) for pk, row in state.items() if row.fresh and desired.get(pk) != row.priority
    }
    if not changes:
        return 0
    ids, values = list(changes), [changes[pk] for pk in changes]
    if sqlrows.vendor() == "postgresql":
        with sqlrows.cursor() as cursor:
            cursor.execute(
                f"UPDATE {TASK} t SET priority = v.priority "
                "FROM unnest(%s::bigint[], %s::bigint[]) AS v(id, priority) "
                f"WHERE t.id = v.id AND t.id IN (SELECT id FROM {TASK} WHERE id = ANY(%s) "
                "AND assigned_count = 0 ORDER BY id FOR NO KEY UPDATE SKIP LOCKED)",
                [ids, values, ids],
            )
            return int(cursor.rowcount)
    from django.db.models import Case, IntegerField, Value, When

    return Task.objects.filter(pk__in=ids, assigned_count=0).update(
        priority=Case(
            *[When(pk=pk, then=Value(value)) for pk, value in changes.items()], output_field=IntegerField()
        )
    )


def _dropped_delete(pool: JudgingPool, state: dict[int, TaskState], *, keep: set[int]) -> list[int]:
    """Delete the tasks the pool created that left its order and that nobody holds or ever answered;
    their ids.

    The candidates come from `state` (the pool's tasks as read); they are locked (SKIP LOCKED: a task a
    claim is taking right now stays) and re-checked under the lock, so a task is never deleted under a
    reservation."""
    maybe = [pk for pk, row in state.items() if row.created and row.fresh and pk not in keep]
    if not maybe:
        return []
    dropped = (
        Task.objects.filter(pk__in=maybe, assigned_count=0, label_count=0)
        .exclude(priority__lt=0)  # urgent (the gaps of a run): wanted outside the pool
        .exclude(Exists(Assignment.objects.filter(task=OuterRef("pk"))))
        .exclude(Exists(PoolTask.objects.filter(task=OuterRef("pk")).exclude(pool=pool)))
    )
    ids = list(
        dropped.order_by("pk").select_for_update(skip_locked=True, of=("self",)).values_list("pk", flat=True)
    )
    if ids:
        Task.objects.filter(pk__in=ids).delete()
    return ids


def _counters_refresh(pool: JudgingPool, history: History, *, pending: int) -> None:
    flags = np.array([relevant for _, relevant in history.judged], dtype=np.int64)
    pool.judged = len(history.judged)
    pool.relevant = int(flags.sum())
    pool.yield_curve = np.cumsum(flags).tolist()
    pool.pending = pending
    pool.refreshed_at = timezone.now()


#: The pool's columns a materialisation writes.
POOL_FIGURES = ["stage", "judged", "relevant", "pending", "yield_curve", "refreshed_at"]


# --- a finished pool beside a newer one -----------------------------------------------------------------


def _ordering_elsewhere(pool: JudgingPool) -> JudgingPool | None:
    """For a finished pool (`done`), the project's other pool whose order decides its priorities now, if
    any (`ordering_pool`); None for a judging pool, or when no other pool builds or judges.

    The project's row is locked first (no key, as `pool_create` does), so that a finished pool that an
    undo brings back under its budget and a new pool of the project take turns: one of them orders."""
    if pool.stage != Stage.DONE:
        return None
    Project.objects.select_for_update(no_key=True).filter(pk=pool.project_id).first()
    other = ordering_pool(project_id=pool.project_id)
    return other if other is not None and other.pk != pool.pk else None


def _follow(pool: JudgingPool, history: History, *, ordering: JudgingPool) -> Materialised:
    """The re-ordering of a finished pool while `ordering`, a newer pool of the project, builds or judges:
    its figures follow the answers, but it stays `done` (even when an undo brought it back under its
    budget), creates and deletes no task, and gives no priority. It only takes a priority it gave from its
    tasks that nobody started and that `ordering` does not want (a pair an undo re-opened), so the newer
    pool's order is the project's alone. Once no other pool orders, its next re-ordering materialises its
    order again."""
    links = _links_read(pool)
    theirs = set(
        PoolTask.objects.filter(pool=ordering, task_id__in=list(links.state)).values_list(
            "task_id", flat=True
        )
    )
    changed = _priorities_set({}, {pk: row for pk, row in links.state.items() if pk not in theirs})
    pool.stage = Stage.DONE
    _counters_refresh(pool, history, pending=sum(row.labels == 0 for row in links.state.values()))
    return Materialised(0, 0, changed, 0)


# --- re-ordering as answers arrive ----------------------------------------------------------------------


def pool_answers_changed(project_id: int) -> None:
    """`annotations.hooks`' call after answers committed in a project with priorities: ask for a
    re-prioritisation of each of its judging pools (debounced; see the module docstring).

    One read gives the live pools with the creation time of their pending job, if any: a pool with one
    is joined without writing (the job has not read the answers yet: it starts `DEBOUNCE_SECONDS` after
    it was created, and a job that started is no longer pending), the others get a job of their own."""
    if _joined.get(project_id, 0.0) > time.monotonic():
        return
    # A pool whose budget is spent too: the pairs that were in flight are still answered, and its figures
    # (and its stage, after an undo) follow them.
    pending = PoolReprioritise.objects.filter(pool=OuterRef("pk"), status=PoolReprioritise.Status.PENDING)
    pools = (
        JudgingPool.objects.filter(project=project_id, stage__in=LIVE)
        .order_by()
        .values_list("pk", Subquery(pending.order_by().values("created_at")[:1]))
    )
    now = timezone.now()
    # Until when every pool's pending job is sure to start after this process's next answers commit.
    until = JOIN_MEMO_SECONDS
    for pool_id, since in pools:
        if since is None:
            if not pool_reprioritise_request(pool_id=pool_id):
                until = 0.0  # joined a job another process created just now, or the queue is down
            continue
        until = min(until, DEBOUNCE_SECONDS - JOIN_MARGIN_SECONDS - (now - since).total_seconds())
    if until > 0:
        # Only while each job is still waiting: the answers this process then passes over are read by it.
        _joined[project_id] = time.monotonic() + until


def pool_reprioritise_request(*, pool_id: int, countdown: float = DEBOUNCE_SECONDS) -> bool:
    """Queue a re-prioritisation of the pool; False when one is already pending (this joins it) or the
    queue is down (the job is then failed with the reason, and the next answer asks again)."""
    try:
        with transaction.atomic():
            job = PoolReprioritise.objects.create(pool_id=pool_id)
    except IntegrityError:
        return False
    return job_enqueue(job, countdown=countdown)


def pool_reprioritise_run(*, job_id: int) -> JobOutcome:
    outcome = job_run(PoolReprioritise, pk=job_id, compute=_reprioritise_compute, store=_reprioritise_store)
    if outcome.status == "done":
        job = PoolReprioritise.objects.select_related("pool").get(pk=job_id)
        newer = Annotation.objects.filter(project=job.pool.project_id, pk__gt=job.answers_seen).exists()
        if newer and job.pool.stage in LIVE:
            pool_reprioritise_request(pool_id=job.pool_id)
    return outcome


def _reprioritise_compute(job: PoolReprioritise, progress: ProgressFn) -> History:
    pool = job.pool
    if pool.stage not in LIVE:
        return History([], 0)
    return pool_history(pool, PoolCandidates.from_bytes(bytes(pool.candidates)))


def _reprioritise_store(job: PoolReprioritise, history: History) -> None:
    # Under the pool's lock: one materialisation of a pool at a time. Answers that committed after the
    # compute read are caught by the next job (`pool_reprioritise_run` asks for it).
    pool = JudgingPool.objects.select_for_update(of=("self",)).get(pk=job.pool_id)
    if pool.stage not in LIVE:
        return
    ordering = _ordering_elsewhere(pool)
    if ordering is not None:
        done = _follow(pool, history, ordering=ordering)
    else:
        done = _materialise(pool, PoolCandidates.from_bytes(bytes(pool.candidates)), history)
    pool.save(update_fields=POOL_FIGURES)
    job.answers_seen = history.answers_seen
    job.changed, job.created_tasks, job.deleted_tasks = done.changed, done.created, done.deleted
    job.save(update_fields=["answers_seen", "changed", "created_tasks", "deleted_tasks"])
