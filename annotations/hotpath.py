"""The statements of a claim and an answer, in SQL.

Every answer an annotator gives runs these: through the ORM they cost about 20 ms of Python per answer
(building and compiling querysets, making model instances), written out about 2 ms. Each function is one
statement, the same as the ORM query it replaced, reading only the columns it needs; the callers in
`annotations.services` keep the transactions, the lock order and the rules.

Two databases are served: PostgreSQL, and SQLite for the embedded demo. Their differences are the row
locks (SQLite has none, and serialises writers on the whole database instead), the shuffle hash
(`shuffle_sql`) and how datetimes travel (`_db_time`, `_py_time`).
"""

from __future__ import annotations

from dataclasses import astuple, dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Any

from django.contrib.auth.models import User as AuthUser
from django.db import connection, transaction
from django.utils.dateparse import parse_datetime
from rest_framework.authtoken.models import Token

from annotations import kept_sign_ins
from annotations.models import (
    TASK_RANK_MODULUS,
    Annotation,
    AnnotatorCounts,
    Assignment,
    Document,
    Project,
    ProjectMembership,
    Task,
    Topic,
)
from evalplatform import sqlrows
from evalplatform.auth import session_user_parts, session_user_statement

TASK = Task._meta.db_table
ASSIGNMENT = Assignment._meta.db_table
ANNOTATION = Annotation._meta.db_table
MEMBERSHIP = ProjectMembership._meta.db_table
PROJECT = Project._meta.db_table
TOPIC = Topic._meta.db_table
DOCUMENT = Document._meta.db_table
RESERVED, LABELLED = Assignment.State.RESERVED.value, Assignment.State.LABELLED.value
RELEASED = Assignment.State.RELEASED.value


def shuffle_sql(column: str, seed: int) -> tuple[str, list[Any]]:
    """A per-annotator pseudo-random sort key for a task id: a seeded 64-bit hash in PostgreSQL, a cheaper
    affine mix of the same inputs in SQLite. Each annotator's seed gives them their own order."""
    seed = int(seed)
    if sqlrows.vendor() == "postgresql":
        return f"hashint8extended({column}::bigint, %s::bigint)", [seed]
    return f"(({column} * %s + %s) %% {TASK_RANK_MODULUS})", [seed % 1_000_003 + 1, seed % TASK_RANK_MODULUS]


def _lock(clause: str) -> str:
    return f" {clause}" if _row_locks() else ""


@cache
def _row_locks() -> bool:
    return bool(connection.features.has_select_for_update)


def _db_time(value: datetime) -> Any:
    # psycopg takes an aware datetime as it is (what PostgreSQL's `adapt_datetimefield_value` returns).
    return value if sqlrows.vendor() == "postgresql" else connection.ops.adapt_datetimefield_value(value)


def _py_time(value: Any) -> datetime:
    """A datetime read by a raw query: PostgreSQL gives it aware, SQLite as UTC text."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    parsed = parse_datetime(str(value))
    assert parsed is not None, value
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _has_place(
    cap: int | None, column: str = "assigned_count", *, extra: bool = True
) -> tuple[str, list[Any]]:
    """The condition that a task has a place under `cap` and its own extra places (None: no limit), and
    its parameters. `column` is the assigned count, qualified as the task's other columns are read.
    Without `extra`, the cap alone: for gold tasks read off an index range (routing gives extra places to
    ordinary tasks only, and reading the column would fetch every row of the range)."""
    if cap is None:
        return "1 = 1", []
    if not extra:
        return f"{column} < %s", [cap]
    prefix = column.rpartition(".")[0]
    return f"{column} < %s + {prefix + '.' if prefix else ''}extra_places", [cap]


def _one(sql: str, params: list[Any]) -> tuple[Any, ...] | None:
    with sqlrows.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()  # type: ignore[no-any-return]


def _column(sql: str, params: list[Any]) -> list[Any]:
    with sqlrows.cursor() as cursor:
        cursor.execute(sql, params)
        return [row[0] for row in cursor.fetchall()]


def _write(sql: str, params: list[Any]) -> int:
    with sqlrows.cursor() as cursor:
        cursor.execute(sql, params)
        return int(cursor.rowcount)


#: A bulk insert of this many tasks or more refreshes the planner's statistics of the task table.
ANALYZE_AFTER_ROWS = 1000


def tasks_analyze_after(new_rows: int) -> None:
    """After a commit that added `new_rows` tasks, refresh PostgreSQL's statistics of the task table.

    Autovacuum would, within a minute or so; until then the planner takes a project of thousands of new
    tasks for an empty one and reads its claims' candidates by scanning the whole project (0.6 s a claim
    in the load benchmark) instead of the rank index."""
    if new_rows >= ANALYZE_AFTER_ROWS and sqlrows.vendor() == "postgresql":
        transaction.on_commit(lambda: _write(f"ANALYZE {TASK}", []))


def tasks_mark_gold(ids: list[int], *, batch: int) -> None:
    """Mark the tasks `ids` gold: on PostgreSQL in one statement, on the embedded SQLite (one writer at a
    time) in statements of `batch` tasks. Tasks already gold are left unwritten.

    One statement takes every task's lock before the trigger that moves a task's answers to the gold
    counts (`annotations_counts_task_kind`, at the statement's end) writes any annotator's counts row: the
    order in which an answer, a skip or an undo takes them (its task's, then at its statement's end its
    annotator's counts row). Marked in batches, an earlier batch's trigger held an annotator's counts row
    while a later batch waited for a task that annotator's answer held, and the answer waited for the
    row: a deadlock, whose victim was the import (tests/annotations/test_gold_import_race.py)."""
    if sqlrows.vendor() == "postgresql":
        _write(f"UPDATE {TASK} SET is_gold = true WHERE id = ANY(%s::bigint[]) AND NOT is_gold", [ids])
        return
    for start in range(0, len(ids), batch):
        Task.objects.filter(id__in=ids[start : start + batch], is_gold=False).update(is_gold=True)


# --- the lookups every request makes --------------------------------------------------------------------


def membership_of(*, slug: str, user_id: int) -> ProjectMembership | None:
    """The user's membership of the project `slug`, with `.project` loaded (None: not a member)."""
    member, project = sqlrows.columns(ProjectMembership, "m"), sqlrows.columns(Project, "p")
    row = _one(
        f"SELECT {member.select}, {project.select} FROM {MEMBERSHIP} m "
        f"JOIN {PROJECT} p ON p.id = m.project_id WHERE p.slug = %s AND m.user_id = %s ORDER BY m.id LIMIT 1",
        [slug, user_id],
    )
    if row is None:
        return None
    membership: ProjectMembership = sqlrows.instance(member, row)
    membership.project = sqlrows.instance(project, row, member.width)
    return membership


#: The project of a slug (`p`) and the user's membership of it (`m`, joined on its unique key): the sign-ins'
#: joins (its parameter: the slug). Each is read by its key: as a join on `m.id = (a subquery)` the generic
#: plan hashed every membership of every project (and, with the default random_page_cost, every user) on
#: every request, a sequential scan that grows with the tables.
_MEMBERSHIP_BY_SLUG = (
    f"LEFT JOIN {PROJECT} p ON p.slug = %s "
    f"LEFT JOIN {MEMBERSHIP} m ON m.project_id = p.id AND m.user_id = {{user}} "
)


#: The project row's version, selected after the membership's and the project's columns by the sign-ins.
_PROJECT_VERSION_COLUMN = "p.xmin::text"


def _membership_in(
    row: tuple[Any, ...], start: int, member_shape: sqlrows.Shape, project_shape: sqlrows.Shape
) -> ProjectMembership | None:
    """The membership read from `start` on in a sign-in's row (None: not a member), its project loaded
    with its row's version (`_PROJECT_VERSION_COLUMN`) as `kept_sign_ins.PROJECT_VERSION`."""
    if row[start] is None:
        return None
    membership: ProjectMembership = sqlrows.instance(member_shape, row, start)
    membership.project = sqlrows.instance(project_shape, row, start + member_shape.width)
    version = row[start + member_shape.width + project_shape.width]
    setattr(membership.project, kept_sign_ins.PROJECT_VERSION, version)
    return membership


def _token_member_shapes() -> list[sqlrows.Shape]:
    return [
        sqlrows.columns(model, alias)
        for model, alias in ((Token, "t"), (AuthUser, "u"), (ProjectMembership, "m"), (Project, "p"))
    ]


def token_member_statement(shapes: list[sqlrows.Shape] | None = None) -> str:
    """`token_member_of`'s statement, selecting `shapes` (`_token_member_shapes()`'s); its parameters: the
    project's slug, the token's key."""
    return (
        f"SELECT {', '.join(shape.select for shape in shapes or _token_member_shapes())}, "
        f"{_PROJECT_VERSION_COLUMN} "
        f"FROM {Token._meta.db_table} t "
        f"JOIN {AuthUser._meta.db_table} u ON u.id = t.user_id "
        f"{_MEMBERSHIP_BY_SLUG.format(user='t.user_id')}WHERE t.key = %s"
    )


def _session_member_shapes() -> tuple[sqlrows.Shape, sqlrows.Shape]:
    return sqlrows.columns(ProjectMembership, "m"), sqlrows.columns(Project, "p")


def session_member_statement(shapes: tuple[sqlrows.Shape, sqlrows.Shape] | None = None) -> str:
    """`session_member_of`'s statement, selecting `shapes` (`_session_member_shapes()`'s) after the session
    and its user; its parameters: the project's slug, the session's key, the time its expiry is compared
    with."""
    member_shape, project_shape = shapes or _session_member_shapes()
    return session_user_statement(
        f"{member_shape.select}, {project_shape.select}, {_PROJECT_VERSION_COLUMN}",
        _MEMBERSHIP_BY_SLUG.format(user="u.id"),
    )


def token_member_of(*, key: str, slug: str) -> tuple[Token, AuthUser, ProjectMembership | None] | None:
    """The API token `key` and its user, with that user's membership of the project `slug` (`.project`
    loaded, with its row's version as `kept_sign_ins.PROJECT_VERSION`; None: not a member) read in the same
    statement: what an annotator's API request reads first, in one round trip instead of two. None when
    there is no such token."""
    shapes = _token_member_shapes()
    row = _one(token_member_statement(shapes), [slug, key])
    if row is None:
        return None
    token_shape, user_shape, member_shape, project_shape = shapes
    token = sqlrows.instance(token_shape, row)
    user = sqlrows.instance(user_shape, row, token_shape.width)
    start = token_shape.width + user_shape.width
    return token, user, _membership_in(row, start, member_shape, project_shape)


def session_member_of(session_key: str, unexpired_after: Any, *, slug: str) -> tuple[str, Any] | None:
    """The session `session_key` (unexpired after `unexpired_after`: `evalplatform.sessions.SessionStore.
    load_with` reads it so) with the user it signs in and their membership of the project `slug`
    (`.project` loaded, with its row's version as `kept_sign_ins.PROJECT_VERSION`), in one statement
    (`evalplatform.auth.session_user_statement` with the membership joined): what the judge page's answer
    reads first (`evalplatform.auth.session_sign_in_with`). None when there is no such session; else its
    data and (the user, their membership or None), or None where the session names no user found."""
    shapes = _session_member_shapes()
    member_shape, project_shape = shapes
    row = _one(session_member_statement(shapes), [slug, session_key, unexpired_after])
    if row is None:
        return None
    session_data, user = session_user_parts(row)
    if user is None:
        return session_data, None
    start = 1 + sqlrows.columns(AuthUser, "u").width
    return session_data, (user, _membership_in(row, start, member_shape, project_shape))


#: The attribute of a request's user that holds the memberships read with its sign-in, by project slug.
_SIGNED_IN_WITH = "_memberships_read_at_sign_in"


def membership_remember(user: AuthUser, slug: str, membership: ProjectMembership | None) -> None:
    """Keep the membership read with the user's sign-in on this request's user, for `membership_known`."""
    setattr(user, _SIGNED_IN_WITH, {slug: membership})


def membership_known(user: Any, slug: str) -> tuple[bool, ProjectMembership | None]:
    """(True, the membership) when this request's sign-in already read the user's membership of `slug`."""
    known: dict[str, ProjectMembership | None] = getattr(user, _SIGNED_IN_WITH, {})
    return (True, known[slug]) if slug in known else (False, None)


def served_assignment(assignment_id: int) -> Assignment:
    """The assignment with its task, topic and document loaded: what a claim hands the annotator."""
    shapes = _served_shapes()
    row = _one(
        f"SELECT {', '.join(shape.select for shape in shapes)} FROM {ASSIGNMENT} a "
        f"JOIN {TASK} t ON t.id = a.task_id JOIN {TOPIC} q ON q.id = t.topic_id "
        f"JOIN {DOCUMENT} d ON d.id = t.document_id WHERE a.id = %s",
        [assignment_id],
    )
    if row is None:
        raise Assignment.DoesNotExist(assignment_id)
    return _served(shapes, row, 0)


def _served_shapes() -> list[sqlrows.Shape]:
    return [
        sqlrows.columns(model, alias)
        for model, alias in ((Assignment, "a"), (Task, "t"), (Topic, "q"), (Document, "d"))
    ]


def _served(shapes: list[sqlrows.Shape], row: tuple[Any, ...], start: int) -> Assignment:
    """The assignment of a row read with `_served_shapes`' columns from `start` on, its task, topic and
    document attached."""
    loaded = []
    for shape in shapes:
        loaded.append(sqlrows.instance(shape, row, start))
        start += shape.width
    assignment, task, topic, document = loaded
    task.topic, task.document = topic, document
    assignment.task = task
    return assignment  # type: ignore[no-any-return]


# --- the claim ------------------------------------------------------------------------------------------


def membership_lock(*, project_id: int, user_id: int) -> int | None:
    """Lock the annotator's membership row (their claims queue up on it); their shuffle seed, or None when
    they are no longer an annotator of the project."""
    row = _one(
        f"SELECT shuffle_seed FROM {MEMBERSHIP} WHERE project_id = %s AND user_id = %s AND role = %s"
        + _lock("FOR UPDATE"),
        [project_id, user_id, ProjectMembership.Role.ANNOTATOR.value],
    )
    return None if row is None else int(row[0])


@dataclass(frozen=True)
class OwnCounts:
    done_ordinary: int
    done_gold: int
    live_ordinary: int
    live_gold: int
    #: Tasks with a place left that the annotator holds or held: the project's open tasks less these are
    #: the ones still available to them.
    held_open_ordinary: int
    held_open_gold: int
    #: The annotator's unanswered reservations, live or expired (a claim serves such one again).
    reserved: int


def own_counts(
    *, project_id: int, user_id: int, now: datetime, overlap: int, gold_overlap: int | None
) -> OwnCounts:
    """One pass over the annotator's own assignments (and their tasks' counters)."""
    row = _one(
        *own_counts_sql(
            project_id=project_id, user_id=user_id, now=now, overlap=overlap, gold_overlap=gold_overlap
        )
    )
    assert row is not None
    return OwnCounts(*(int(value or 0) for value in row))


def own_counts_sql(
    *, project_id: int, user_id: int, now: datetime, overlap: int, gold_overlap: int | None
) -> tuple[str, list[Any]]:
    (select, select_params), (source, source_params) = _own_counts_parts(
        project_id=project_id, user_id=user_id, now=now, overlap=overlap, gold_overlap=gold_overlap
    )
    return f"SELECT {select} {source}", [*select_params, *source_params]


def _task_by_key(assignment: str, alias: str) -> str:
    """The join of an assignment's task (`is_gold`, `assigned_count`, `extra_places`) as `alias`, read by
    its key (PostgreSQL). OFFSET 0 keeps the subquery from being merged into a join: as a join, the generic
    plan of a prepared statement was a hash join over every task of every project."""
    return (
        f"CROSS JOIN LATERAL (SELECT is_gold, assigned_count, extra_places FROM {TASK} "
        f"WHERE id = {assignment}.task_id OFFSET 0) {alias}"
    )


def _own_counts_parts(
    *, project_id: int, user_id: int, now: datetime, overlap: int, gold_overlap: int | None
) -> tuple[tuple[str, list[Any]], tuple[str, list[Any]]]:
    """The own counts' select list and its FROM and WHERE, each with its parameters."""
    gold_place, gold_params = _has_place(gold_overlap, "t.assigned_count")
    if sqlrows.vendor() == "postgresql":
        tasks = _task_by_key("a", "t")
    else:  # SQLite has no LATERAL; its planner reads each task by its key anyway
        tasks = f"JOIN {TASK} t ON t.id = a.task_id"
    select = (
        "COUNT(*) FILTER (WHERE a.state <> %s AND NOT t.is_gold), "
        "COUNT(*) FILTER (WHERE a.state <> %s AND t.is_gold), "
        "COUNT(*) FILTER (WHERE a.state = %s AND a.expires_at > %s AND NOT t.is_gold), "
        "COUNT(*) FILTER (WHERE a.state = %s AND a.expires_at > %s AND t.is_gold), "
        "COUNT(*) FILTER (WHERE NOT t.is_gold AND t.assigned_count < %s + t.extra_places), "
        f"COUNT(*) FILTER (WHERE t.is_gold AND {gold_place}), "
        "COUNT(*) FILTER (WHERE a.state = %s)"
    )
    select_params = [RESERVED, RESERVED, RESERVED, _db_time(now), RESERVED, _db_time(now), overlap,
                     *gold_params, RESERVED]  # fmt: skip
    source = f"FROM {ASSIGNMENT} a {tasks} WHERE a.project_id = %s AND a.annotator_id = %s"
    return (select, select_params), (source, [project_id, user_id])


def _kept_counts_parts(
    *, project_id: int, user_id: int, now: datetime, overlap: int, gold_overlap: int | None
) -> tuple[tuple[str, list[Any]], tuple[str, list[Any]]]:
    """`_own_counts_parts`' seven counts without the pass over the annotator's assignments (PostgreSQL):
    what it costs no longer grows with the answers they have given.

    - answered, by kind: the row `AnnotatorCounts` that triggers keep;
    - reserved and live: their one reservation (at most one per project: a unique index), read by it;
    - held with a place left: the reservation's task; their released assignments (skips and the like,
      read off the annotator's index by state) whose task has a place; and the tasks with a place and at
      least one taken that they answered with a grade that counts: a range of the task index (the
      started tasks, those fewer than the overlap hold, and the handful open through extra places) with
      a probe of the annotator's assignment each. A labelled assignment holds a place of its task, so
      its task's count is at least one and nothing is missed by starting the range there.

    Equal to the pass on every state the judging writes (tests/annotations/test_hotpath_contract.py
    holds the two to the same figures)."""
    params: list[Any] = []

    def held_open(is_gold: bool, cap: int) -> str:
        """The released and the labelled assignments of the kind whose task has a place under `cap`."""
        kind = "" if is_gold else "NOT "
        place, place_params = _has_place(cap, "t2.assigned_count")
        params.extend([project_id, user_id, *place_params])
        released = (
            f"(SELECT COUNT(*) FROM {ASSIGNMENT} a2 {_task_by_key('a2', 't2')} WHERE a2.project_id = %s "
            f"AND a2.annotator_id = %s AND a2.state = '{RELEASED}' AND {kind}t2.is_gold AND {place})"
        )
        mine = f"COALESCE((SELECT true FROM {ASSIGNMENT} a3 WHERE a3.task_id = t3.id AND a3.annotator_id + 0 = %s AND a3.state = '{LABELLED}'), false)"
        params.extend([project_id, is_gold, cap, user_id])
        started = (
            f"(SELECT COUNT(*) FROM {TASK} t3 WHERE t3.project_id = %s AND t3.is_gold = %s "
            f"AND t3.assigned_count >= 1 AND t3.assigned_count < %s AND {mine})"
        )
        params.extend([project_id, is_gold, cap, cap, user_id])
        extra = (
            f"(SELECT COUNT(*) FROM {TASK} t3 WHERE t3.project_id = %s AND t3.extra_places > 0 "
            "AND t3.is_gold = %s AND t3.assigned_count >= %s AND t3.assigned_count < %s + t3.extra_places "
            f"AND {mine})"
        )
        return f"{released} + {started} + {extra}"

    def reservation_open(is_gold: bool, cap: int) -> str:
        """1 when their reservation is of the kind and its task has a place under `cap`, else 0."""
        place, place_params = _has_place(cap, "r.assigned_count")
        params.extend(place_params)
        return f"CASE WHEN {'' if is_gold else 'NOT '}r.is_gold AND {place} THEN 1 ELSE 0 END"

    params.extend([_db_time(now), _db_time(now)])
    columns = [
        "COALESCE(c.done_ordinary, 0)",
        "COALESCE(c.done_gold, 0)",
        "CASE WHEN r.expires_at > %s AND NOT r.is_gold THEN 1 ELSE 0 END",
        "CASE WHEN r.expires_at > %s AND r.is_gold THEN 1 ELSE 0 END",
        f"{reservation_open(False, overlap)} + {held_open(False, overlap)}",
    ]
    if gold_overlap is None:  # every gold task has a place: all of their gold assignments
        columns.append("COALESCE(c.done_gold, 0) + CASE WHEN r.is_gold THEN 1 ELSE 0 END")
    else:
        columns.append(f"{reservation_open(True, gold_overlap)} + {held_open(True, gold_overlap)}")
    columns.append("CASE WHEN r.expires_at IS NULL THEN 0 ELSE 1 END")
    source = (
        f"FROM (SELECT 1) one LEFT JOIN {AnnotatorCounts._meta.db_table} c "
        "ON c.project_id = %s AND c.annotator_id = %s "
        f"LEFT JOIN LATERAL (SELECT a.expires_at, t.is_gold, t.assigned_count, t.extra_places FROM {ASSIGNMENT} a "
        f"{_task_by_key('a', 't')} WHERE a.project_id = %s AND a.annotator_id = %s "
        f"AND a.state = '{RESERVED}') r ON true"
    )
    return (", ".join(columns), params), (source, [project_id, user_id, project_id, user_id])


@dataclass(frozen=True)
class Candidates:
    """The first window of a claim's ordinary candidates, read with the annotator's own counts."""

    #: Started tasks (`started_candidates_sql`); None when the claim does not read them (no overlap > 1).
    started: list[int] | None
    #: Fresh tasks with a priority, in priority order (`prioritised_candidates_sql`); None when the claim
    #: does not read them (the project has no priorities).
    prioritised: list[int] | None
    #: Fresh tasks round the ring from the annotator's starting point (`fresh_candidates_sql`, not wrapped).
    fresh: list[int]
    #: Fresh tasks before the starting point (`fresh_candidates_sql`, wrapped); None when not read: the
    #: statement reads them only when `fresh` came short of the window (a full window is the common case,
    #: and a claim tries it before it needs any task round the ring's end).
    fresh_wrapped: list[int] | None


def own_counts_with_candidates(
    *, project_id: int, user_id: int, now: datetime, overlap: int, gold_overlap: int | None,
    started_cap: int | None, seed: int, start: int, window: int, prioritised: bool = False,
) -> tuple[OwnCounts, Candidates | None]:  # fmt: skip
    """The annotator's own counts and, in the same statement, the first `window` of their ordinary
    candidates of each stage a claim reads (PostgreSQL; a claim of an ordinary task, the most common,
    then needs no other read before its lock). In SQLite the counts alone, and None.

    The stages read one snapshot: a task another claim starts meanwhile is fresh or started in it, never
    neither (read one after the other, a started-stage read before and a fresh-stage read after that claim
    both missed it, and a claim near the end of a queue answered "empty" with a place left)."""
    if sqlrows.vendor() != "postgresql":
        counts = own_counts(
            project_id=project_id, user_id=user_id, now=now, overlap=overlap, gold_overlap=gold_overlap
        )
        return counts, None
    row = _one(
        *own_counts_with_candidates_sql(
            project_id=project_id,
            user_id=user_id,
            now=now,
            overlap=overlap,
            gold_overlap=gold_overlap,
            started_cap=started_cap,
            seed=seed,
            start=start,
            window=window,
            prioritised=prioritised,
        )  # fmt: skip
    )
    assert row is not None
    found = OwnCounts(*(int(value or 0) for value in row[:-4]))
    started, first, fresh = ([int(v) for v in ids] for ids in row[-4:-1])
    return found, Candidates(
        started=None if started_cap is None else started,
        prioritised=first if prioritised else None,
        fresh=fresh,
        fresh_wrapped=None if row[-1] is None else [int(v) for v in row[-1]],
    )


def own_counts_with_candidates_sql(
    *, project_id: int, user_id: int, now: datetime, overlap: int, gold_overlap: int | None,
    started_cap: int | None, seed: int, start: int, window: int, prioritised: bool = False,
) -> tuple[str, list[Any]]:  # fmt: skip
    """The seven own counts as `own_counts_sql` gives them, read without its pass (`_kept_counts_parts`),
    and four more columns: the arrays of the started, the prioritised (empty unless `prioritised`), the
    fresh and the wrapped fresh candidates (NULL unless the fresh ones came short of
    `window`: an InitPlan is run only when its value is asked for, so the CASE skips the read). OFFSET 0
    keeps the inner select a subquery: merged into the outer one, its fresh window was read twice (once
    for the CASE, once for the column)."""
    where = {"project_id": project_id, "user_id": user_id}
    (select, select_params), (source, source_params) = _kept_counts_parts(
        **where, now=now, overlap=overlap, gold_overlap=gold_overlap
    )
    fresh, fresh_params = fresh_candidates_sql(
        **where, is_gold=False, gold_overlap=gold_overlap, start=start, wrapped=False, limit=window
    )
    wrapped, wrapped_params = fresh_candidates_sql(
        **where, is_gold=False, gold_overlap=gold_overlap, start=start, wrapped=True, limit=window
    )
    if started_cap is not None:
        started, started_params = started_candidates_sql(
            **where, overlap=started_cap, seed=seed, limit=window
        )
    else:
        started, started_params = _NONE, []
    first, first_params = prioritised_candidates_sql(**where, limit=window) if prioritised else (_NONE, [])
    return (
        f"SELECT x.*, CASE WHEN cardinality(x.fresh) < {_limit(window)} THEN ARRAY({wrapped}) END FROM "
        f"(SELECT {select}, ARRAY({started}), ARRAY({first}), ARRAY({fresh}) AS fresh {source} OFFSET 0) x",
        [*wrapped_params, *select_params, *started_params, *first_params, *fresh_params, *source_params],
    )


def _limit(window: int) -> int:
    """A candidate window, written into the statement's text rather than passed as a parameter: with
    `LIMIT $n` the generic plan of a prepared statement assumes a tenth of the candidates are read, costs
    a bitmap scan and sort of the whole range, and PostgreSQL then plans every execution afresh (0.4 ms,
    twice the statement's own time). The windows are a few constants (`CLAIM_WINDOWS`), so a few texts."""
    return int(window)


#: A candidate stage a claim does not read: no rows, at no cost.
_NONE = "SELECT NULL::bigint WHERE FALSE"


@dataclass(frozen=True)
class OpenTotals:
    """How many of the project's tasks have a place left, by kind."""

    ordinary: int
    gold: int


def open_totals(*, project_id: int, overlap: int, gold_overlap: int | None) -> OpenTotals:
    """The project's tasks with a place left, by kind: a read of the project's range of an index."""
    gold_place, gold_params = _has_place(gold_overlap, extra=False)
    # Ordinary tasks open under the overlap, read off the index as before, plus those open only through
    # their extra places, read off the partial index of such tasks (a handful).
    row = _one(
        "SELECT COUNT(*) FILTER (WHERE NOT is_gold AND assigned_count < %s), "
        f"COUNT(*) FILTER (WHERE is_gold AND {gold_place}), "
        f"(SELECT COUNT(*) FROM {TASK} x WHERE x.project_id = %s AND x.extra_places > 0 AND NOT x.is_gold "
        "AND x.assigned_count >= %s AND x.assigned_count < %s + x.extra_places) "
        f"FROM {TASK} WHERE project_id = %s",
        [overlap, *gold_params, project_id, overlap, overlap, project_id],
    )
    assert row is not None
    return OpenTotals(ordinary=int(row[0] or 0) + int(row[2] or 0), gold=int(row[1] or 0))


# The annotator never held the task. A scalar subquery, not NOT EXISTS: PostgreSQL runs it per candidate
# row as a probe by task id (a task has a handful of assignments), whatever its statistics say. As an
# anti-join it was planned, on freshly filled tables, as a nested loop over all the annotator's assignments
# for every candidate. `+ 0` keeps the planner off the annotator index for the same reason: a probe by
# annotator reads all of their assignments. `NOT COALESCE(..., false)`, not `(...) IS NULL`: the planner
# takes a NULL test of an expression to pass one row in 200, and with a window of 16 it then read every
# candidate of the range by a bitmap scan and sorted them (1.4 ms in a project of 20,000 tasks, growing
# with it) where the rank index read in order stops after the window; a negated boolean it takes as one in
# two, and reads the index in order.
_NOT_MINE = (
    f"NOT COALESCE((SELECT true FROM {ASSIGNMENT} a WHERE a.task_id = t.id "
    "AND a.annotator_id + 0 = %s), false)"
)


def started_candidates_sql(
    *, project_id: int, user_id: int, overlap: int, seed: int, limit: int
) -> tuple[str, list[Any]]:
    """Ordinary tasks that others started and that have a place, fullest first, then in the annotator's own
    order: a small set while a queue is being worked through (about one task per annotator at work)."""
    shuffle, shuffle_params = shuffle_sql("t.id", seed)
    return (
        f"SELECT t.id FROM {TASK} t WHERE t.project_id = %s AND NOT t.is_gold "
        f"AND t.assigned_count > 0 AND t.assigned_count < %s AND {_NOT_MINE} "
        f"ORDER BY t.assigned_count DESC, {shuffle} LIMIT {_limit(limit)}",
        [project_id, overlap, user_id, *shuffle_params],
    )


def fresh_candidates_sql(
    *, project_id: int, user_id: int, is_gold: bool, gold_overlap: int | None, start: int, wrapped: bool,
    limit: int,
) -> tuple[str, list[Any]]:  # fmt: skip
    """Tasks in `Task.rank` order round the ring from `start`: ordinary tasks nobody holds yet, or gold
    tasks with a place. `wrapped` reads the part of the ring before `start`. A range read of the
    `task_claimable_rank` (ordinary) or `task_rank` (gold) index, however large the project."""
    places, place_params = (
        ("t.assigned_count = 0", []) if not is_gold else _has_place(gold_overlap, "t.assigned_count")
    )
    side = "<" if wrapped else ">="
    return (
        f"SELECT t.id FROM {TASK} t WHERE t.project_id = %s AND t.is_gold = %s AND {places} "
        f"AND t.rank {side} %s AND {_NOT_MINE} ORDER BY t.rank LIMIT {_limit(limit)}",
        [project_id, is_gold, *place_params, start, user_id],
    )


def extra_candidates_sql(*, project_id: int, user_id: int, overlap: int, limit: int) -> tuple[str, list[Any]]:
    """Ordinary tasks with places beyond the overlap (`Task.extra_places`: a pair a machine judge's routing
    asked one more judgment of) and a place left, fullest first: the first stage of a claim in a project
    that has any (`Project.has_extra_places`). A read of the partial `task_extra_places` index."""
    return (
        f"SELECT t.id FROM {TASK} t WHERE t.project_id = %s AND t.extra_places > 0 AND NOT t.is_gold "
        f"AND t.assigned_count < %s + t.extra_places AND {_NOT_MINE} "
        f"ORDER BY t.assigned_count DESC, t.id LIMIT {_limit(limit)}",
        [project_id, overlap, user_id],
    )


def prioritised_candidates_sql(*, project_id: int, user_id: int, limit: int) -> tuple[str, list[Any]]:
    """Ordinary tasks nobody holds yet that have a priority (a pool built from runs), lowest first (the
    id breaks ties): the fresh tasks a claim serves before the ring of ranks. A range read of the partial
    `task_claimable_priority` index; every annotator reads the same order, and SKIP LOCKED spreads
    concurrent claims over its first entries."""
    return (
        f"SELECT t.id FROM {TASK} t WHERE t.project_id = %s AND NOT t.is_gold AND t.assigned_count = 0 "
        f"AND t.priority IS NOT NULL AND {_NOT_MINE} ORDER BY t.priority, t.id LIMIT {_limit(limit)}",
        [project_id, user_id],
    )


def candidate_ids(query: tuple[str, list[Any]]) -> list[int]:
    return [int(task_id) for task_id in _column(*query)]


def task_lock(*, task_id: int, cap: int | None, wait: bool) -> int | None:
    """Lock the task if it still has a place (SKIP LOCKED unless `wait`): its assigned count, or None."""
    place, params = _has_place(cap)
    features = connection.features
    lock = "FOR NO KEY UPDATE" if features.has_select_for_no_key_update else "FOR UPDATE"
    if not wait and features.has_select_for_update_skip_locked:
        lock += " SKIP LOCKED"
    row = _one(
        f"SELECT assigned_count FROM {TASK} WHERE id = %s AND {place}" + _lock(lock), [task_id, *params]
    )
    return None if row is None else int(row[0])


def task_extra_places(*, task_id: int) -> int:
    row = _one(f"SELECT extra_places FROM {TASK} WHERE id = %s", [task_id])
    return 0 if row is None else int(row[0])


def task_has_place(*, task_id: int, cap: int | None) -> bool:
    place, params = _has_place(cap)
    return _one(f"SELECT 1 FROM {TASK} WHERE id = %s AND {place}", [task_id, *params]) is not None


def _occupying_sql(*, task_id: int, now: datetime, excluding: int | None = None) -> tuple[str, list[Any]]:
    """The count of the assignments holding a place of the task now: answers that count and live
    reservations. One spelling, read alone (`occupying_count`) and inside the fused `reservation_take`."""
    other = "" if excluding is None else " AND id <> %s"
    return (
        f"SELECT COUNT(*) AS n FROM {ASSIGNMENT} WHERE task_id = %s{other} "
        "AND (state = %s OR (state = %s AND expires_at > %s))",
        [task_id, *([] if excluding is None else [excluding]), LABELLED, RESERVED, _db_time(now)],
    )


def occupying_count(*, task_id: int, now: datetime, excluding: int | None = None) -> int:
    """The assignments holding a place of the task now: answers that count and live reservations."""
    row = _one(*_occupying_sql(task_id=task_id, now=now, excluding=excluding))
    assert row is not None
    return int(row[0])


def assigned_count_set(*, task_id: int, value: int) -> None:
    _write(f"UPDATE {TASK} SET assigned_count = %s WHERE id = %s", [value, task_id])


def reservation_insert(
    *, project_id: int, task_id: int, user_id: int, now: datetime, expires_at: datetime
) -> int:
    row = _one(
        f"INSERT INTO {ASSIGNMENT} (project_id, task_id, annotator_id, state, reserved_at, expires_at) "
        "VALUES (%s, %s, %s, %s, %s, %s) RETURNING id",
        [project_id, task_id, user_id, RESERVED, _db_time(now), _db_time(expires_at)],
    )
    assert row is not None
    return int(row[0])


@dataclass(frozen=True)
class Reservation:
    #: The assignments holding a place of the task before this one (None: not counted, the task has no cap).
    occupied: int | None
    #: The new assignment's id; None when the task had no place left (`occupied` reached the cap).
    assignment_id: int | None
    #: The new assignment as `served_assignment` gives it, when read in the same statement (PostgreSQL).
    served: Assignment | None = None


def reservation_take(
    *, project_id: int, task_id: int, user_id: int, now: datetime, expires_at: datetime, cap: int | None
) -> Reservation:
    """With the task locked: re-count the places it has taken (answers that count, live reservations), and
    if one is left under `cap`, reserve it for the annotator and add one to its assigned count.

    One statement in PostgreSQL (its sub-statements share one snapshot, taken after the task's lock),
    which also reads what the annotator is served (`served`); the same three steps one by one in SQLite
    (`reservation_take_steps`), where the whole database is locked for writing anyway. The two are held
    to the same rows by tests/annotations/test_hotpath_contract.py."""
    if sqlrows.vendor() != "postgresql":
        return reservation_take_steps(
            project_id=project_id, task_id=task_id, user_id=user_id, now=now, expires_at=expires_at, cap=cap
        )
    place, place_params = (
        ("", [])
        if cap is None
        else (
            f" WHERE (SELECT n FROM occupied) < %s + (SELECT extra_places FROM {TASK} WHERE id = %s)",
            [cap, task_id],
        )
    )
    occupying, occupying_params = _occupying_sql(task_id=task_id, now=now)
    shapes = _served_shapes()
    # The task, topic and document are read by the main query, which sees the rows as they were before
    # the statement: the task's assigned count is taken from the update instead.
    row = _one(
        f"WITH occupied AS ({occupying}), "
        f"a AS (INSERT INTO {ASSIGNMENT} (project_id, task_id, annotator_id, state, reserved_at, expires_at) "
        f"SELECT %s, %s, %s, %s, %s, %s{place} RETURNING *), "
        f"counted AS (UPDATE {TASK} SET assigned_count = assigned_count + 1 "
        "WHERE id = %s AND EXISTS (SELECT 1 FROM a) RETURNING assigned_count) "
        f"SELECT (SELECT n FROM occupied), (SELECT assigned_count FROM counted), "
        f"{', '.join(shape.select for shape in shapes)} FROM (SELECT 1) AS one LEFT JOIN a ON TRUE "
        f"LEFT JOIN {TASK} t ON t.id = a.task_id LEFT JOIN {TOPIC} q ON q.id = t.topic_id "
        f"LEFT JOIN {DOCUMENT} d ON d.id = t.document_id",
        [
            *occupying_params,
            project_id,
            task_id,
            user_id,
            RESERVED,
            _db_time(now),
            _db_time(expires_at),
            *place_params,
            task_id,
        ],  # fmt: skip
    )
    assert row is not None
    occupied = None if cap is None else int(row[0])
    if row[2] is None:
        return Reservation(occupied, None)
    served = _served(shapes, row, 2)
    served.task.assigned_count = int(row[1])
    return Reservation(occupied, served.pk, served)


def reservation_take_steps(
    *, project_id: int, task_id: int, user_id: int, now: datetime, expires_at: datetime, cap: int | None
) -> Reservation:
    """`reservation_take` step by step: the count, the insert and the counter, one statement each."""
    occupied = None if cap is None else occupying_count(task_id=task_id, now=now)
    if occupied is not None and cap is not None and occupied >= cap + task_extra_places(task_id=task_id):
        return Reservation(occupied, None)
    assignment_id = reservation_insert(
        project_id=project_id, task_id=task_id, user_id=user_id, now=now, expires_at=expires_at
    )
    counters_add(task_id=task_id, assigned=1, labels=0)
    return Reservation(occupied, assignment_id)


@dataclass(frozen=True)
class FirstReserved:
    """What `reservation_take_first` did with a list of candidates."""

    #: The new assignment as `served_assignment` gives it; None when no candidate could be reserved.
    served: Assignment | None
    #: The candidates tried before it (all of them when none was reserved) that another claim held locked
    #: while they still had a place: a claim may come back and wait for them.
    busy: list[int]


def reservation_take_first(
    *,
    project_id: int,
    task_ids: list[int],
    user_id: int,
    now: datetime,
    expires_at: datetime,
    cap: int | None,
) -> FirstReserved:
    """Reserve the first of `task_ids`, in order, that can be reserved: lock it unless another claim holds
    it (`task_lock`, SKIP LOCKED; a task held so, with a place, is noted as busy), re-count its places
    under the lock and reserve one if left (`reservation_take`; a counter found behind is corrected).

    One round trip in PostgreSQL: the function `annotations_reserve_first` (migration
    0015_claimload_reserve_first), whose statements each take a fresh snapshot, as separate statements
    do. In SQLite the steps one by one (`reservation_take_first_steps`). tests/annotations/
    test_hotpath_contract.py holds the two to the same rows."""
    if sqlrows.vendor() != "postgresql":
        return reservation_take_first_steps(
            project_id=project_id, task_ids=task_ids, user_id=user_id, now=now, expires_at=expires_at,
            cap=cap,
        )  # fmt: skip
    shapes = _served_shapes()
    # The function's columns are the assignment's, under the alias `a`; the task, topic and document are
    # read by this statement's snapshot, taken before the function's writes: the task's assigned count
    # is taken from the function instead.
    row = _one(
        f"SELECT a.assigned_after, a.busy, {', '.join(shape.select for shape in shapes)} "
        "FROM annotations_reserve_first(%s::bigint[], %s::bigint, %s::bigint, %s, %s, %s::integer, %s::text, %s::text) a "
        f"LEFT JOIN {TASK} t ON t.id = a.task_id LEFT JOIN {TOPIC} q ON q.id = t.topic_id "
        f"LEFT JOIN {DOCUMENT} d ON d.id = t.document_id",
        [list(task_ids), project_id, user_id, _db_time(now), _db_time(expires_at), cap, RESERVED, LABELLED],
    )
    assert row is not None
    busy = [int(task_id) for task_id in row[1]]
    if row[2] is None:
        return FirstReserved(None, busy)
    served = _served(shapes, row, 2)
    served.task.assigned_count = int(row[0])
    return FirstReserved(served, busy)


def reservation_take_first_steps(
    *,
    project_id: int,
    task_ids: list[int],
    user_id: int,
    now: datetime,
    expires_at: datetime,
    cap: int | None,
) -> FirstReserved:
    """`reservation_take_first` one statement at a time: per candidate, its lock, then (held by another)
    whether it has a place, or (locked) its reservation and, when it had none, its counter's correction."""
    busy: list[int] = []
    for task_id in task_ids:
        assigned = task_lock(task_id=task_id, cap=cap, wait=False)
        if assigned is None:
            if task_has_place(task_id=task_id, cap=cap):
                busy.append(task_id)
            continue
        taken = reservation_take(
            project_id=project_id, task_id=task_id, user_id=user_id, now=now, expires_at=expires_at, cap=cap
        )
        if taken.assignment_id is not None:
            return FirstReserved(taken.served or served_assignment(taken.assignment_id), busy)
        if taken.occupied is not None and cap is not None:
            # The counter fell behind the places taken; correct it so the fast filter passes over this task.
            assigned_count_set(task_id=task_id, value=max(taken.occupied, assigned, cap))
    return FirstReserved(None, busy)


def counters_add(*, task_id: int, assigned: int, labels: int) -> None:
    """Add to a task's counters (the caller orders several by task id, so that lockers never deadlock)."""
    _write(
        f"UPDATE {TASK} SET assigned_count = assigned_count + %s, label_count = label_count + %s WHERE id = %s",
        [assigned, labels, task_id],
    )


# --- the answer -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LockedAssignment:
    id: int
    task_id: int
    state: str
    reserved_at: datetime
    expires_at: datetime


def assignment_lock(*, assignment_id: int, project_id: int, user_id: int) -> LockedAssignment | None:
    """Lock one of the annotator's assignments in the project (None when there is no such)."""
    row = _one(
        f"SELECT id, task_id, state, reserved_at, expires_at FROM {ASSIGNMENT} "
        "WHERE id = %s AND project_id = %s AND annotator_id = %s" + _lock("FOR UPDATE"),
        [assignment_id, project_id, user_id],
    )
    if row is None:
        return None
    return LockedAssignment(int(row[0]), int(row[1]), str(row[2]), _py_time(row[3]), _py_time(row[4]))


def membership_assignment_lock(
    *, assignment_id: int, project_id: int, user_id: int
) -> tuple[int, LockedAssignment] | None:
    """Lock the annotator's membership row and one of their assignments in the project, in one statement
    (the membership first, as a claim and an undo take them): their shuffle seed and the assignment. None
    when they are no longer an annotator of the project or have no such assignment."""
    row = _one(
        f"SELECT m.shuffle_seed, a.id, a.task_id, a.state, a.reserved_at, a.expires_at FROM {MEMBERSHIP} m "
        f"JOIN {ASSIGNMENT} a ON a.id = %s AND a.project_id = m.project_id AND a.annotator_id = m.user_id "
        "WHERE m.project_id = %s AND m.user_id = %s AND m.role = %s" + _lock("FOR UPDATE OF m, a"),
        [assignment_id, project_id, user_id, ProjectMembership.Role.ANNOTATOR.value],
    )
    if row is None:
        return None
    locked = LockedAssignment(int(row[1]), int(row[2]), str(row[3]), _py_time(row[4]), _py_time(row[5]))
    return int(row[0]), locked


@dataclass(frozen=True)
class AnswerEffect:
    """What storing an answer does besides inserting it, as the rules of `annotations.services` decided it
    (`services.answer_effect`): the statements here write it as given and derive none of it."""

    #: The answered assignment's new state: labelled (the answer counts and keeps its place) or released
    #: (a skip, an unclear or a too-fast answer gives the place back).
    state: str
    #: What the task's `assigned_count` and `label_count` move by.
    assigned: int
    labels: int
    #: The answer's too-fast flag.
    too_fast: bool


def assignment_answered(*, assignment_id: int, state: str, now: datetime) -> None:
    _write(
        f"UPDATE {ASSIGNMENT} SET state = %s, answered_at = %s WHERE id = %s",
        [state, _db_time(now), assignment_id],
    )


#: An answer's columns, in the order of `_annotation_values`.
_ANNOTATION_COLUMNS = (
    "assignment_id, project_id, task_id, annotator_id, grade, seconds_spent, skipped, unclear, too_fast, "
    "comment, created_at"
)
_ANNOTATION_INSERT = (
    f"INSERT INTO {ANNOTATION} ({_ANNOTATION_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
    "RETURNING id"
)


def answer_record(answer: Annotation, effect: AnswerEffect) -> None:
    """Store an answer to the locked assignment with its `effect`: the assignment takes its state, the
    task's counters move by it, and the (unsaved) answer is inserted, flagged too fast as it says, and
    given its id, as `save()` would.

    One statement in PostgreSQL (the three writes as sub-statements of one); three in SQLite
    (`answer_record_steps`). tests/annotations/test_hotpath_contract.py holds the two to the same rows."""
    answer.too_fast = effect.too_fast
    if sqlrows.vendor() != "postgresql":
        answer_record_steps(answer, effect)
        return
    row = _one(
        f"WITH answered AS (UPDATE {ASSIGNMENT} SET state = %s, answered_at = %s WHERE id = %s), "
        f"counted AS (UPDATE {TASK} SET assigned_count = assigned_count + %s, label_count = label_count + %s "
        f"WHERE id = %s) {_ANNOTATION_INSERT}",
        [
            effect.state,
            _db_time(answer.created_at),
            answer.assignment_id,
            effect.assigned,
            effect.labels,
            answer.task_id,
            *_annotation_values(answer),
        ],  # fmt: skip
    )
    assert row is not None
    _saved(answer, int(row[0]))


def answer_record_steps(answer: Annotation, effect: AnswerEffect) -> None:
    """`answer_record` step by step: the assignment, the counters and the answer, one statement each."""
    answer.too_fast = effect.too_fast
    assignment_answered(assignment_id=answer.assignment_id, state=effect.state, now=answer.created_at)
    counters_add(task_id=answer.task_id, assigned=effect.assigned, labels=effect.labels)
    annotation_insert(answer)


def answer_plain(answer: Annotation, *, effect: AnswerEffect, min_seconds: int) -> bool:
    """Store an answer in one statement, locks and checks included, when it is the plain case: the
    annotator's assignment is still reserved, its reservation has not expired, and at least `min_seconds`
    were spent on it since it was served (under that, the service's rules would give the answer another
    effect than `effect`). On success the (unsaved) answer gets its id, its task and the seconds spent,
    as `answer_record` would store them with `effect`; True. False, with nothing written, for anything
    else (refusals, an expired reservation that may keep its place, a too-fast grade): the caller then
    takes the locks and applies the rules one by one. Always False in SQLite.

    What the answer does (`effect`) and how long it must have taken (`min_seconds`) are the service's
    decisions, passed in: the statement re-derives no rule. It measures the seconds spent as the
    step-by-step path does (`services._answer`: never below 0), and tests/annotations/
    test_hotpath_contract.py holds the two paths to the same rows.

    In PostgreSQL's autocommit mode this is the answer's whole transaction: no BEGIN and COMMIT round
    trips, and no lock held between statements. The assignment and then its task are locked, as in the
    step-by-step path (and an undo, which locks the membership first, waits on the same rows)."""
    if sqlrows.vendor() != "postgresql":
        return False
    sql, params = _plain_sql(answer, effect=effect, min_seconds=min_seconds)
    row = _one(sql, params)
    if row is None:
        return False
    _plain_saved(answer, row, effect)
    return True


@dataclass(frozen=True)
class AnsweredAndClaimed:
    """What `answer_and_claim` did."""

    #: `fallback`: nothing written (not the plain case: the caller goes the step-by-step way); `deferred`:
    #: the answer stored, the claim left to a transaction of its own (see the function's migration);
    #: `task`, `empty` or `break`: the answer stored and the claim made.
    outcome: str
    #: The annotator's counts after the claim (`task`, `empty`): done, live and available, ordinary then
    #: gold, as `selectors.QueueCounts` takes them.
    counts: tuple[int, int, int, int, int, int] | None
    #: The project's open totals, when the function counted them (the caller passed none).
    totals: OpenTotals | None
    #: The new reservation as `served_assignment` gives it (`task`).
    served: Assignment | None


#: `answer_and_claim`'s own columns, before the served assignment's.
_ANSWER_CLAIM_COLUMNS = (
    "a.x_outcome, a.x_answer_id, a.x_answer_task_id, a.x_seconds, a.x_done_ordinary, a.x_done_gold, "
    "a.x_live_ordinary, a.x_live_gold, a.x_available_ordinary, a.x_available_gold, a.x_open_ordinary, "
    "a.x_open_gold, a.x_assigned_after"
)


def answer_and_claim(
    answer: Annotation, *, effect: AnswerEffect, min_seconds: int, project: Project, expires_at: datetime,
    totals: OpenTotals | None,
) -> AnsweredAndClaimed:  # fmt: skip
    """Store the answer (`answer_plain`'s plain case, the membership locked first) and claim the
    annotator's next task, in one call of the PostgreSQL function `annotations_answer_claim` (migrations
    0017_answer_claim, 0020_answer_claim_sign_in and 0021_answer_claim_windows_when_reached): in
    autocommit one statement is the whole transaction, the sign-in's read and this call the request's two
    round trips (one, from a sign-in kept by `kept_sign_ins`, whose guard the function checks first:
    raises `kept_sign_ins.SignInUnconfirmed`, nothing written, where it fails, else confirms the
    request's sign-in). `totals`: the project's open totals as the caller keeps them,
    or None to have them counted. On `fallback` nothing is written; otherwise the (unsaved) answer gets
    its id, task and seconds spent, as `answer_plain` gives them. PostgreSQL only.

    The rules are the caller's, passed in as for `answer_plain` (the effect, the minimum seconds)
    and read from `project` (overlaps, gold shares, the stages a claim reads); the function follows the
    steps of `services._claim_locked` and `services._claim_one`, and tests/annotations/
    test_hotpath_contract.py holds it to them."""
    shapes = _served_shapes()
    now = _db_time(answer.created_at)
    guard = kept_sign_ins.pending()
    row = _one(
        f"SELECT {_ANSWER_CLAIM_COLUMNS}, {', '.join(shape.select for shape in shapes)} "
        "FROM annotations_answer_claim(%s::bigint, %s::bigint, %s::bigint, %s::timestamptz, %s::text, "
        "%s::integer, %s::integer, %s::boolean, %s::integer, %s::integer, %s::boolean, %s::boolean, %s::text, "
        "%s::timestamptz, %s::integer, %s::integer, %s::boolean, %s::boolean, %s::integer, %s::integer, "
        "%s::float8, %s::float8, %s::float8, %s::integer, %s::integer, %s::text, %s::text, %s::text, %s::text) a "
        f"LEFT JOIN {TASK} t ON t.id = a.task_id LEFT JOIN {TOPIC} q ON q.id = t.topic_id "
        f"LEFT JOIN {DOCUMENT} d ON d.id = t.document_id",
        [
            answer.assignment_id, answer.project_id, answer.annotator_id, now, effect.state, effect.assigned,
            effect.labels, effect.too_fast, min_seconds, answer.grade, answer.skipped, answer.unclear,
            answer.comment, _db_time(expires_at), project.overlap, project.gold_overlap,
            project.has_extra_places, project.has_priorities, totals and totals.ordinary,
            totals and totals.gold, project.gold_share_min, project.gold_share_max,
            project.gold_share_target, project.session_cap_minutes, project.session_break_minutes,
            *(astuple(guard) if guard is not None else (None, None, None, None)),
        ],
    )  # fmt: skip
    assert row is not None
    outcome = str(row[0])
    if outcome == "unverified":  # the kept sign-in no longer holds: nothing was written
        raise kept_sign_ins.SignInUnconfirmed()
    kept_sign_ins.confirm()
    if outcome == "fallback":
        return AnsweredAndClaimed(outcome, None, None, None)
    _plain_saved(answer, row[1:4], effect)
    counts = None if row[4] is None else (int(row[4]), int(row[5]), int(row[6]), int(row[7]), int(row[8]),
                                          int(row[9]))  # fmt: skip
    counted = None if totals is not None or row[10] is None else OpenTotals(int(row[10]), int(row[11]))
    served = None
    if outcome == "task":
        served = _served(shapes, row, 13)
        served.task.assigned_count = int(row[12])
    return AnsweredAndClaimed(outcome, counts, counted, served)


def _plain_sql(answer: Annotation, *, effect: AnswerEffect, min_seconds: int) -> tuple[str, list[Any]]:
    """`answer_plain`'s statement (`annotations_answer_claim`, migration 0017, runs it with the membership
    locked first)."""
    now = _db_time(answer.created_at)
    sql = (
        f"WITH answered AS (UPDATE {ASSIGNMENT} SET state = %s, answered_at = %s "
        "WHERE id = %s AND project_id = %s AND annotator_id = %s AND state = %s AND expires_at > %s "
        "AND GREATEST(0, EXTRACT(EPOCH FROM %s - reserved_at)) >= %s "
        "RETURNING task_id, GREATEST(0, EXTRACT(EPOCH FROM %s - reserved_at))::float8 AS seconds), "
        f"counted AS (UPDATE {TASK} SET assigned_count = assigned_count + %s, label_count = label_count + %s "
        "WHERE id = (SELECT task_id FROM answered)) "
    )
    insert = (
        f"INSERT INTO {ANNOTATION} ({_ANNOTATION_COLUMNS}) "
        "SELECT %s, %s, task_id, %s, %s, seconds, %s, %s, %s, %s, %s FROM answered "
        "RETURNING id, task_id, seconds_spent"
    )
    return f"{sql}{insert}", [
        effect.state,
        now,
        answer.assignment_id,
        answer.project_id,
        answer.annotator_id,
        RESERVED,
        now,
        now,
        min_seconds,
        now,
        effect.assigned,
        effect.labels,
        answer.assignment_id,
        answer.project_id,
        answer.annotator_id,
        answer.grade,
        answer.skipped,
        answer.unclear,
        effect.too_fast,
        answer.comment,
        now,
    ]  # fmt: skip


def _plain_saved(answer: Annotation, row: tuple[Any, ...], effect: AnswerEffect) -> None:
    """The (unsaved) answer as the plain statement stored it: its id, task and seconds spent."""
    answer.task_id, answer.seconds_spent, answer.too_fast = int(row[1]), float(row[2]), effect.too_fast
    _saved(answer, int(row[0]))


def annotation_insert(answer: Annotation) -> None:
    """Insert the (unsaved) answer and give it its id, as `save()` would, in one statement."""
    row = _one(_ANNOTATION_INSERT, _annotation_values(answer))
    assert row is not None
    _saved(answer, int(row[0]))


def _saved(answer: Annotation, pk: int) -> None:
    answer.pk = pk
    answer._state.adding = False
    answer._state.db = connection.alias


def _annotation_values(answer: Annotation) -> list[Any]:
    return [
        answer.assignment_id, answer.project_id, answer.task_id, answer.annotator_id, answer.grade,
        answer.seconds_spent, answer.skipped, answer.unclear, answer.too_fast, answer.comment,
        _db_time(answer.created_at),
    ]  # fmt: skip
