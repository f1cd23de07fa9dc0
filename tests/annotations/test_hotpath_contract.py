"""The hot path's two spellings held to one contract: each fused PostgreSQL statement of `annotations.hotpath`
writes and reads the same rows as its step-by-step version (the statements SQLite runs one by one), over
states hypothesis generates.

An answer's rules are decided once, in `annotations.services` (`answer_effect`, `answer_min_seconds`), and
passed to the statements; these tests are what keeps the fused SQL from drifting from them. Each example
builds a state (a project's settings, the tasks' assignments by other annotators and by the one answering,
expired or live, in any state; the counters they imply), runs the fused and then the step-by-step version
from that same state, each in a savepoint rolled back after it, and compares everything they wrote or
answered. Row ids are left out: the sequences move on between the two runs.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timedelta
from typing import Any
from unittest import mock

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models.functions import Least
from django.utils import timezone
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from rest_framework.authtoken.models import Token

from annotations import hotpath, selectors, services
from annotations.models import Annotation, Assignment, Project, ProjectMembership, Task
from tests.annotations.conftest import answer_and_claim_outcomes, build_project
from tests.conftest import ALICE, BOB, LENA, Persona, make_user

#: Few enough examples that the file runs in seconds on a 2-core machine; each is a small, dense state.
EXAMPLES = settings(
    max_examples=int(os.environ.get("CONTRACT_EXAMPLES", 50)),
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
Role = ProjectMembership.Role
OTHERS = (BOB, Persona("carol", "carol-password-123", "annotator"), Persona("dave", "dave-password-123", ""))
#: The states an assignment is generated in: answered, released, or reserved and live or expired.
KINDS = ("labelled", "released", "live", "expired")
#: How long ago a task was served (ms): at the project minimums' edges (3 s, 20 s), and after them.
SERVED_MS_AGO = (-1_500, 0, 2_999, 3_000, 19_999, 20_000, 30_000)


@dataclass
class World:
    project: Project
    alice: User
    others: list[User]
    tasks: list[Task]  # 8: two topics of four documents, the first of each gold


@pytest.fixture
def world(db: None) -> World:
    lead, alice = make_user(LENA), make_user(ALICE)
    others = [make_user(persona) for persona in OTHERS]
    project = build_project(
        lead=lead, annotators=[alice, *others], topics=2, docs_per_topic=4, gold_per_topic=1
    )
    return World(project, alice, others, list(Task.objects.filter(project=project).order_by("pk")))


@pytest.fixture
def claimer(world: World) -> User:
    """An annotator who holds nothing in the project: a claim never takes a task its claimer held, nor a
    second reservation."""
    erin = make_user(Persona("erin", "erin-password-123", "annotator"))
    ProjectMembership.objects.create(project=world.project, user=erin, role=Role.ANNOTATOR)
    return erin


class _RolledBack(Exception):
    def __init__(self, result: Any) -> None:
        self.result = result


def rolled_back(run: Callable[[], Any]) -> Any:
    """What `run` returns (or the refusal it raises, as its class and message) and the rows it left,
    read before its savepoint is rolled back."""
    try:
        with transaction.atomic():
            try:
                result: Any = run()
            except services.JudgingError as exc:
                result = (type(exc).__name__, str(exc))
            raise _RolledBack((result, rows()))
    except _RolledBack as done:
        return done.result


def rows() -> dict[str, Any]:
    """Everything the hot path writes, keyed without row ids."""
    assignment_key = dict(Assignment.objects.values_list("pk", "task_id"))
    return {
        "tasks": list(Task.objects.order_by("pk").values_list("pk", "assigned_count", "label_count")),
        "assignments": sorted(
            Assignment.objects.values_list(
                "task_id", "annotator_id", "state", "reserved_at", "expires_at", "answered_at"
            )
        ),
        "answers": sorted(
            (
                assignment_key[a["assignment_id"]],
                *[v for k, v in a.items() if k not in {"id", "assignment_id"}],
            )
            for a in Annotation.objects.values()
        ),
    }


# --- generated states -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class State:
    """A generated judging state: the project's settings and who holds which task how."""

    overlap: int
    gold_overlap: int | None
    min_seconds: int
    policy: str
    #: Per task: the other annotators' assignments (`KINDS`), at most one each.
    others: tuple[tuple[str, ...], ...]
    #: Per task: the answering annotator's own assignment (`KINDS`), or None.
    own: tuple[str | None, ...]
    #: When the annotator's reservations were served and when the live ones expire, from now (ms).
    served_ms_ago: int
    expires_ms: int


@st.composite
def states(draw: st.DrawFn) -> State:
    task_count = 8
    return State(
        overlap=draw(st.integers(1, 3)),
        gold_overlap=draw(st.sampled_from([None, 1, 2])),
        min_seconds=draw(st.sampled_from([0, 3, 20])),
        policy=draw(st.sampled_from(list(Project.TooFastPolicy.values))),
        others=tuple(tuple(draw(st.lists(st.sampled_from(KINDS), max_size=3))) for _ in range(task_count)),
        own=tuple(draw(st.lists(st.sampled_from([None, *KINDS]), min_size=task_count, max_size=task_count))),
        # Served a moment ago, or (the server clocks apart) a moment from now.
        served_ms_ago=draw(st.one_of(st.sampled_from(SERVED_MS_AGO), st.integers(-1_500, 40_000))),
        expires_ms=draw(st.integers(1, 600_000)),
    )


def build(world: World, state: State, now: datetime) -> None:
    """Write `state` (inside the example's savepoint): the project's settings, the assignments, and the
    task counters they imply (an expired reservation still counts until it is released)."""
    Project.objects.filter(pk=world.project.pk).update(
        overlap=state.overlap, gold_overlap=state.gold_overlap, min_seconds_per_task=state.min_seconds,
        too_fast_policy=state.policy,
    )  # fmt: skip
    world.project.refresh_from_db()
    served = now - timedelta(milliseconds=state.served_ms_ago)
    reserving: set[int] = set()
    made = []
    for task, others, own in zip(world.tasks, state.others, state.own, strict=True):
        people = [*zip(world.others, others, strict=False), (world.alice, own)]
        for person, kind in people:
            if kind is None:
                continue
            if kind in ("live", "expired") and person.pk in reserving:
                kind = "labelled"  # one reservation per annotator and project
            made.append(
                _assignment(world, task, person, kind, served=served, now=now, expires_ms=state.expires_ms)
            )
            if kind in ("live", "expired"):
                reserving.add(person.pk)
    Assignment.objects.bulk_create(made)
    for task in world.tasks:
        held = [a for a in made if a.task_id == task.pk and a.state != Assignment.State.RELEASED]
        labelled = sum(a.state == Assignment.State.LABELLED for a in held)
        Task.objects.filter(pk=task.pk).update(assigned_count=len(held), label_count=labelled)


def _assignment(
    world: World, task: Task, person: User, kind: str, *, served: datetime, now: datetime, expires_ms: int
) -> Assignment:
    reserved = kind in ("live", "expired")
    expires_at = now + timedelta(milliseconds=expires_ms) if kind == "live" else now - timedelta(seconds=1)
    expires_at = max(expires_at, served + timedelta(milliseconds=1))
    if kind == "expired" and expires_at > now:
        served, expires_at = now - timedelta(minutes=20), now - timedelta(minutes=5)
    return Assignment(
        project=world.project, task=task, annotator=person,
        state=Assignment.State.RESERVED if reserved else kind,
        reserved_at=served, expires_at=expires_at, answered_at=None if reserved else now - timedelta(seconds=2),
    )  # fmt: skip


@contextmanager
def step_by_step() -> Iterator[None]:
    """The hot path as SQLite runs it, on PostgreSQL: each fused statement replaced by its steps."""

    def counts_only(**kwargs: Any) -> tuple[hotpath.OwnCounts, None]:
        for name in ("started_cap", "seed", "start", "window", "prioritised"):
            kwargs.pop(name, None)
        return hotpath.own_counts(**kwargs), None

    patches = {
        "answer_plain": lambda *args, **kwargs: False,
        "answer_record": hotpath.answer_record_steps,
        "reservation_take": hotpath.reservation_take_steps,
        "reservation_take_first": hotpath.reservation_take_first_steps,
        "own_counts_with_candidates": counts_only,
        "membership_assignment_lock": lambda **kwargs: None,  # the caller then locks one by one
        "answer_and_claim": lambda *args, **kwargs: hotpath.AnsweredAndClaimed("fallback", None, None, None),
    }
    with ExitStack() as stack:
        for name, steps in patches.items():
            stack.enter_context(mock.patch.object(hotpath, name, steps))
        yield


@pytest.fixture(autouse=True)
def sweep_every_time() -> Iterator[None]:
    """Both runs of an example sweep expired reservations before their claims (the process's own schedule
    would sweep in the first run only)."""
    with mock.patch.object(services, "_expiry_sweep_due", lambda project: True):
        yield


# --- the contract -----------------------------------------------------------------------------------------


ANSWERS = st.sampled_from(["grade 0", "grade 3", "unclear", "skip"])


#: The answered assignment: mostly a reservation, live or expired; sometimes answered already, or none.
ANSWERED = st.sampled_from(["live", "live", "live", "expired", "expired", "labelled", "released", None])


@EXAMPLES
@given(
    state=states(), task=st.integers(0, 7), answered=ANSWERED, answer=ANSWERS, and_claim=st.booleans(),
    by_owner=st.sampled_from([True, True, True, True, False]),
)  # fmt: skip
def test_it_answers_alike_fused_and_step_by_step(
    world: World, state: State, task: int, answered: str | None, answer: str, and_claim: bool, by_owner: bool
) -> None:
    """`answer_plain`, `answer_record` and, with the next claim, `membership_assignment_lock`,
    `own_counts_with_candidates` and `reservation_take`: the same answer (or refusal), claim and rows."""
    now = timezone.now()
    # The annotator's one reservation is the one answered, if any.
    own = tuple("labelled" if kind in ("live", "expired") else kind for kind in state.own)
    state = replace(state, own=(*own[:task], answered, *own[task + 1 :]))

    def run() -> Any:
        build(world, state, now)
        if by_owner:
            mine = Assignment.objects.filter(task=world.tasks[task], annotator=world.alice).first()
        else:  # another annotator's assignment, as if its id were guessed
            mine = Assignment.objects.exclude(annotator=world.alice).order_by("task_id").first()
        fields: dict[str, Any] = {"project": world.project, "annotator": world.alice,
                                  "assignment_id": mine.pk if mine else 2**31, "now": now, "comment": " why "}  # fmt: skip
        if answer == "skip":
            skip = services.annotation_skip_and_claim if and_claim else services.annotation_skip
            return _outcome(skip(**fields))
        submit = services.annotation_submit_and_claim if and_claim else services.annotation_submit
        grade = None if answer == "unclear" else int(answer.split()[1])
        return _outcome(submit(**fields, grade=grade, unclear=answer == "unclear"))

    fused = rolled_back(run)
    with step_by_step():
        steps = rolled_back(run)
    assert fused == steps


@EXAMPLES
@given(
    state=states(), task=st.integers(0, 7), answer=ANSWERS, seed=st.integers(0, 2**62 - 1),
    shares=st.sampled_from([(0.10, 0.15), (0.3, 0.5), (0.0, 0.9), (0.5, 0.5), (0.0, 0.0)]),
    session=st.sampled_from([(0, 10), (60, 10), (2, 1), (1, 0)]),
    history=st.lists(st.integers(1, 70), max_size=6), prioritised=st.booleans(),
    priorities=st.lists(st.one_of(st.none(), st.integers(0, 5)), min_size=8, max_size=8),
    extra_places=st.lists(st.sampled_from([0, 0, 1, 2]), min_size=8, max_size=8),
)  # fmt: skip
# A break due: answers 30 s apart back to 150 s ago, under a cap of 2 minutes with a break of 1.
@example(
    state=State(overlap=2, gold_overlap=None, min_seconds=0, policy="refuse", others=((),) * 8,
                own=("labelled",) * 7 + (None,), served_ms_ago=30_000, expires_ms=600_000),
    task=7, answer="grade 3", seed=5, shares=(0.1, 0.15), session=(2, 1), history=[30] * 5,
    prioritised=False, priorities=[None] * 8, extra_places=[0] * 8,
)  # fmt: skip
def test_it_answers_and_claims_alike_in_one_call_and_step_by_step(
    world: World, state: State, task: int, answer: str, seed: int, shares: tuple[float, float],
    session: tuple[int, int], history: list[int], prioritised: bool, priorities: list[int | None],
    extra_places: list[int],
) -> None:  # fmt: skip
    """`answer_and_claim` (one call of the function `annotations_answer_claim`) against the answer and the
    claim step by step: the same answer, claim (task, counts, a break or an empty queue) and rows, over
    the gold turn's shares and seeds, a session cap with past answers (`history`: the seconds between
    them, back from now), priorities
    and extra places. The answer is the plain case, so that the call makes it (checked)."""
    now = timezone.now()
    own = tuple("labelled" if kind in ("live", "expired") else kind for kind in state.own)
    state = replace(state, own=(*own[:task], "live", *own[task + 1 :]), served_ms_ago=30_000,
                    expires_ms=max(state.expires_ms, 60_000))  # fmt: skip

    def run() -> Any:
        build(world, state, now)
        cap, pause = session
        Project.objects.filter(pk=world.project.pk).update(
            gold_share_min=shares[0], gold_share_max=shares[1], session_cap_minutes=cap,
            session_break_minutes=pause, has_priorities=prioritised, has_extra_places=any(extra_places),
        )  # fmt: skip
        world.project.refresh_from_db()
        ProjectMembership.objects.filter(project=world.project, user=world.alice).update(shuffle_seed=seed)
        for target, priority, extra in zip(world.tasks, priorities, extra_places, strict=True):
            Task.objects.filter(pk=target.pk).update(priority=priority, extra_places=extra)
        labelled = Assignment.objects.filter(annotator=world.alice, state="labelled").order_by("task_id")
        Annotation.objects.bulk_create(
            Annotation(assignment=done, project=world.project, task_id=done.task_id, annotator=world.alice,
                       grade=1, seconds_spent=5, created_at=now - timedelta(seconds=ago))
            for done, ago in zip(labelled, itertools.accumulate(history), strict=False)
        )  # fmt: skip
        mine = Assignment.objects.get(task=world.tasks[task], annotator=world.alice)
        fields: dict[str, Any] = {"project": world.project, "annotator": world.alice,
                                  "assignment_id": mine.pk, "now": now, "comment": " why "}  # fmt: skip
        if answer == "skip":
            return _outcome(services.annotation_skip_and_claim(**fields))
        grade = None if answer == "unclear" else int(answer.split()[1])
        return _outcome(
            services.annotation_submit_and_claim(**fields, grade=grade, unclear=answer == "unclear")
        )

    with answer_and_claim_outcomes() as outcomes:
        fused = rolled_back(run)
    with step_by_step():
        steps = rolled_back(run)
    assert fused == steps
    # Served 30 s ago, live, at most 20 s asked for: the plain case, made by the call.
    assert len(outcomes) == 1 and outcomes[0] != "fallback", outcomes


def _outcome(done: services.Answered | Annotation) -> dict[str, Any]:
    """An answer's and a claim's outcome, its rows' ids replaced by their keys."""
    answer = done.annotation if isinstance(done, services.Answered) else done
    out: dict[str, Any] = {
        "answer": (answer.task_id, answer.grade, answer.seconds_spent, answer.too_fast, answer.comment)
    }
    if isinstance(done, services.Answered):
        claim = done.claim
        out["claim"] = claim and (
            claim.status,
            claim.assignment and (claim.assignment.task_id, claim.assignment.expires_at),
            claim.counts and asdict(claim.counts),
        )
    return out


@EXAMPLES
@given(state=states(), task=st.integers(0, 7), cap=st.sampled_from([None, 1, 2, 3]), drift=st.integers(-1, 1))
def test_it_reserves_alike_fused_and_step_by_step(
    world: World, claimer: User, state: State, task: int, cap: int | None, drift: int
) -> None:
    """`reservation_take`: the same count of occupied places, the same reservation (or none) and the same
    counters, the task's counter being behind, right or ahead of the places taken."""
    now = timezone.now()
    target = world.tasks[task]

    def run(take: Callable[..., hotpath.Reservation]) -> Callable[[], Any]:
        def inner() -> Any:
            build(world, state, now)
            counted = Task.objects.get(pk=target.pk).assigned_count
            assigned = max(0, counted + drift)
            Task.objects.filter(pk=target.pk).update(
                assigned_count=assigned, label_count=Least("label_count", assigned)
            )
            taken = take(
                project_id=world.project.pk, task_id=target.pk, user_id=claimer.pk, now=now,
                expires_at=now + timedelta(minutes=10), cap=cap,
            )  # fmt: skip
            served = None
            if taken.assignment_id is not None:
                s = taken.served or hotpath.served_assignment(taken.assignment_id)
                served = (s.task_id, s.task.assigned_count, s.task.topic.qid, s.task.document.doc_id, s.state)
            return taken.occupied, taken.assignment_id is not None, served

        return inner

    assert rolled_back(run(hotpath.reservation_take)) == rolled_back(run(hotpath.reservation_take_steps))


@EXAMPLES
@given(
    state=states(), order=st.permutations(range(8)), count=st.integers(1, 8),
    cap=st.sampled_from([None, 1, 2, 3]), drifts=st.lists(st.integers(-1, 1), min_size=8, max_size=8),
)  # fmt: skip
def test_it_reserves_the_first_free_candidate_alike_in_one_call_and_step_by_step(
    world: World,
    claimer: User,
    state: State,
    order: list[int],
    count: int,
    cap: int | None,
    drifts: list[int],
) -> None:
    """`reservation_take_first` (one call of the function `annotations_reserve_first`): the same
    candidate reserved (or none), the same counters corrected on the way, the tasks' counters behind,
    right or ahead of the places taken."""
    now = timezone.now()
    candidates = [world.tasks[i].pk for i in order[:count]]

    def run(take: Callable[..., hotpath.FirstReserved]) -> Callable[[], Any]:
        def inner() -> Any:
            build(world, state, now)
            for task, drift in zip(world.tasks, drifts, strict=True):
                counted = Task.objects.get(pk=task.pk).assigned_count
                assigned = max(0, counted + drift)
                Task.objects.filter(pk=task.pk).update(
                    assigned_count=assigned, label_count=Least("label_count", assigned)
                )
            first = take(
                project_id=world.project.pk, task_ids=candidates, user_id=claimer.pk, now=now,
                expires_at=now + timedelta(minutes=10), cap=cap,
            )  # fmt: skip
            s = first.served
            served = s and (s.task_id, s.task.assigned_count, s.task.topic.qid, s.task.document.doc_id, s.state,
                            s.annotator_id, s.reserved_at, s.expires_at, s.answered_at)  # fmt: skip
            return served, first.busy

        return inner

    with mock.patch.object(hotpath, "reservation_take", hotpath.reservation_take_steps):
        steps = rolled_back(run(hotpath.reservation_take_first_steps))
    assert rolled_back(run(hotpath.reservation_take_first)) == steps


@EXAMPLES
@given(
    state=states(), seed=st.integers(0, 2**31 - 1), window=st.integers(1, 4), started=st.booleans(),
    expired=st.booleans(), prioritised=st.booleans(),
    priorities=st.lists(st.one_of(st.none(), st.integers(0, 5)), min_size=8, max_size=8),
    extra_places=st.lists(st.sampled_from([0, 0, 1, 2]), min_size=8, max_size=8),
)  # fmt: skip
def test_it_counts_and_lists_candidates_alike_fused_and_step_by_step(
    world: World, state: State, seed: int, window: int, started: bool, expired: bool,
    prioritised: bool, priorities: list[int | None], extra_places: list[int],
) -> None:  # fmt: skip
    """`own_counts_with_candidates`: the same counts as the pass over the annotator's assignments (the
    fused statement reads them off `AnnotatorCounts`, their reservation and the started tasks instead),
    and the same first window of started, prioritised, fresh and wrapped fresh candidates as the four
    reads one by one."""
    now = timezone.now() + (timedelta(hours=1) if expired else timedelta(0))
    where: dict[str, Any] = {"project_id": world.project.pk, "user_id": world.alice.pk}

    def run() -> Any:
        build(world, state, timezone.now())
        for task, priority, extra in zip(world.tasks, priorities, extra_places, strict=True):
            Task.objects.filter(pk=task.pk).update(priority=priority, extra_places=extra)
        project = world.project
        started_cap = project.overlap if started and project.overlap > 1 else None
        start = selectors.rank_start(seed)
        counts: dict[str, Any] = {
            "now": now,
            "overlap": project.overlap,
            "gold_overlap": project.gold_overlap,
        }
        fused_counts, candidates = hotpath.own_counts_with_candidates(
            **where, **counts, started_cap=started_cap, seed=seed, start=start, window=window,
            prioritised=prioritised,
        )  # fmt: skip
        assert candidates is not None
        fresh: dict[str, Any] = {
            "is_gold": False,
            "gold_overlap": project.gold_overlap,
            "start": start,
            "limit": window,
        }
        steps = (
            hotpath.own_counts(**where, **counts),
            None if started_cap is None else hotpath.candidate_ids(
                hotpath.started_candidates_sql(**where, overlap=started_cap, seed=seed, limit=window)
            ),
            hotpath.candidate_ids(hotpath.prioritised_candidates_sql(**where, limit=window))
            if prioritised else None,
            ahead := hotpath.candidate_ids(hotpath.fresh_candidates_sql(**where, **fresh, wrapped=False)),
            # Read only when the window ahead came short (`Candidates.fresh_wrapped`).
            None if len(ahead) == window
            else hotpath.candidate_ids(hotpath.fresh_candidates_sql(**where, **fresh, wrapped=True)),
        )  # fmt: skip
        fused = (fused_counts, candidates.started, candidates.prioritised, candidates.fresh,
                 candidates.fresh_wrapped)  # fmt: skip
        assert fused == steps
        return steps

    rolled_back(run)


@EXAMPLES
@given(
    role=st.sampled_from([None, Role.ANNOTATOR, Role.LEAD]), whose=st.sampled_from(["own", "other", "none"]),
    token=st.sampled_from(["own", "other", "none"]), slug=st.sampled_from(["web", "elsewhere"]),
)  # fmt: skip
def test_it_signs_in_and_locks_alike_fused_and_step_by_step(
    world: World, role: str | None, whose: str, token: str, slug: str
) -> None:
    """`membership_assignment_lock` against the two locks one by one, and `token_member_of` against the
    token's and the membership's reads one by one."""
    now = timezone.now()
    bob = world.others[0]

    def run() -> None:
        if role is None:
            ProjectMembership.objects.filter(project=world.project, user=world.alice).delete()
        else:
            ProjectMembership.objects.filter(project=world.project, user=world.alice).update(role=role)
        owner = {"own": world.alice, "other": bob, "none": None}[whose]
        assignment_id = 2**31
        if owner is not None:
            assignment_id = Assignment.objects.create(
                project=world.project, task=world.tasks[0], annotator=owner, reserved_at=now,
                expires_at=now + timedelta(minutes=5),
            ).pk  # fmt: skip
        where: dict[str, Any] = {"project_id": world.project.pk, "user_id": world.alice.pk}
        seed = hotpath.membership_lock(**where)
        locked = hotpath.assignment_lock(assignment_id=assignment_id, **where)
        expected = None if seed is None or locked is None else (seed, locked)
        assert hotpath.membership_assignment_lock(assignment_id=assignment_id, **where) == expected

        holder = {"own": world.alice, "other": bob, "none": None}[token]
        key = Token.objects.create(user=holder).key if holder is not None else "0" * 40
        found = hotpath.token_member_of(key=key, slug=slug)
        if holder is None:
            assert found is None
            return
        assert found is not None
        signed_in, user, membership = found
        alone = hotpath.membership_of(slug=slug, user_id=holder.pk)
        assert (signed_in.key, user.pk) == (key, holder.pk)
        assert _membership_key(membership) == _membership_key(alone)

    rolled_back(run)


def _membership_key(membership: ProjectMembership | None) -> Any:
    return membership and (membership.pk, membership.role, membership.shuffle_seed, membership.project.slug)
