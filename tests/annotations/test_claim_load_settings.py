"""What the annotation hot path does for load: answer-and-claim in one request, claims that read an index
instead of sorting the project, open totals counted once a second per process, and expiry sweeps that
are throttled but never hide the last tasks."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from django.contrib.auth.models import User
from django.db import DatabaseError, OperationalError, connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotations import hotpath, selectors, services
from annotations.models import TASK_RANK_MODULUS, Annotation, Assignment, ProjectMembership, Task
from evalplatform import sqlrows
from tests.annotations.conftest import answer_and_claim_outcomes, build_project
from tests.annotations.test_assignment import answer_all, assert_counters_match
from tests.conftest import _database_url_for


def post(client: Client, url: str, body: dict[str, object] | None = None) -> Any:
    return client.post(url, body or {}, content_type="application/json")


@pytest.mark.django_db
class TestSubmitAndClaimNext:
    def test_it_answers_and_hands_over_the_next_task_until_the_queue_is_empty(
        self, client: Client, lena: User, alice: User
    ) -> None:
        project = build_project(lead=lena, annotators=[alice], topics=2, docs_per_topic=3)
        client.force_login(alice)
        base = f"/api/projects/{project.slug}"
        held = post(client, f"{base}/next/").json()["task"]["assignment"]
        seen = [held]
        while True:
            reply = post(client, f"{base}/submit/", {"assignment": held, "grade": 2, "next": True})
            assert reply.status_code == 201
            body = reply.json()
            assert body["assignment"] == held and body["grade"] == 2 and body["counts"] is True
            following = body["next"]
            # The same shape as POST next/ answers, with the progress after this answer.
            assert set(following) == {"status", "task", "progress", "scale", "message"}
            if following["status"] != "task":
                assert following["status"] == "empty" and following["task"] is None
                break
            held = following["task"]["assignment"]
            assert held not in seen
            seen.append(held)
            assert following["progress"]["done"] == len(seen) - 1
            assert Assignment.objects.get(pk=held).state == Assignment.State.RESERVED
        assert len(seen) == 6
        assert following["progress"] == {"done": 6, "remaining": 0, "assigned": 6, "percent": 100}
        assert_counters_match(project)

    def test_without_next_the_reply_is_the_answer_alone(
        self, client: Client, lena: User, alice: User
    ) -> None:
        project = build_project(lead=lena, annotators=[alice])
        client.force_login(alice)
        held = post(client, f"/api/projects/{project.slug}/next/").json()["task"]["assignment"]
        body = post(client, f"/api/projects/{project.slug}/submit/", {"assignment": held, "grade": 1}).json()
        assert "next" not in body
        assert not Assignment.objects.filter(annotator=alice, state=Assignment.State.RESERVED).exists()

    def test_skip_can_claim_the_next_task_too(self, client: Client, lena: User, alice: User) -> None:
        project = build_project(lead=lena, annotators=[alice])
        client.force_login(alice)
        held = post(client, f"/api/projects/{project.slug}/next/").json()["task"]["assignment"]
        body = post(client, f"/api/projects/{project.slug}/skip/", {"assignment": held, "next": True}).json()
        assert body["skipped"] is True
        assert body["next"]["status"] == "task" and body["next"]["task"]["assignment"] != held

    def test_a_refused_answer_claims_nothing(self, client: Client, lena: User, alice: User) -> None:
        project = build_project(lead=lena, annotators=[alice])
        client.force_login(alice)
        held = post(client, f"/api/projects/{project.slug}/next/").json()["task"]["assignment"]
        bad = post(
            client, f"/api/projects/{project.slug}/submit/", {"assignment": held, "grade": 9, "next": True}
        )
        assert bad.status_code == 400 and "next" not in bad.json()
        assert list(Assignment.objects.filter(annotator=alice).values_list("pk", flat=True)) == [held]


@pytest.mark.django_db
class TestAnswerAndClaimInOneTransaction:
    """`services.annotation_submit_and_claim` step by step (SQLite's way, and PostgreSQL's for the answers
    that `hotpath.answer_and_claim` leaves to it): the answer and the next claim commit together, and fall
    back to a claim of its own only where the claim would wait or might miss an expired reservation."""

    @pytest.fixture(autouse=True)
    def step_by_step(self, monkeypatch: pytest.MonkeyPatch) -> None:
        fallback = hotpath.AnsweredAndClaimed("fallback", None, None, None)
        monkeypatch.setattr(hotpath, "answer_and_claim", lambda *args, **kwargs: fallback)

    def test_the_claim_is_made_in_the_answers_transaction(
        self, lena: User, alice: User, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        project = build_project(lead=lena, annotators=[alice])
        held = services.task_claim(project=project, annotator=alice).assignment
        assert held is not None

        def separate_claim(**kwargs: Any) -> services.Claim:
            raise AssertionError("the claim took a transaction of its own")

        monkeypatch.setattr(services, "task_claim", separate_claim)
        answered = services.annotation_submit_and_claim(
            project=project, annotator=alice, assignment_id=held.pk, grade=3
        )
        assert answered.annotation.grade == 3 and answered.claim is not None
        assert answered.claim.status == "task" and answered.claim.assignment is not None
        assert answered.claim.assignment.task_id != held.task_id
        assert_counters_match(project)

    def test_a_claim_that_fails_takes_the_answer_back_with_it(
        self, lena: User, alice: User, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        project = build_project(lead=lena, annotators=[alice])
        held = services.task_claim(project=project, annotator=alice).assignment
        assert held is not None

        def lost_connection(**kwargs: Any) -> hotpath.FirstReserved:
            raise OperationalError("server closed the connection unexpectedly")

        monkeypatch.setattr(hotpath, "reservation_take_first", lost_connection)
        with pytest.raises(OperationalError):
            services.annotation_submit_and_claim(
                project=project, annotator=alice, assignment_id=held.pk, grade=3
            )
        # Nothing half-written: the client's retry answers the same reservation.
        assert not Annotation.objects.filter(assignment=held).exists()
        assert list(Assignment.objects.filter(annotator=alice).values_list("pk", "state")) == [
            (held.pk, Assignment.State.RESERVED)
        ]
        assert_counters_match(project)

    def test_when_every_candidate_is_locked_it_claims_after_the_commit_and_waits(
        self, lena: User, alice: User, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        project = build_project(lead=lena, annotators=[alice])
        held = services.task_claim(project=project, annotator=alice).assignment
        assert held is not None
        real_lock, waited = hotpath.task_lock, []

        def every_task_locked_by_another(*, task_ids: list[int], **kwargs: Any) -> hotpath.FirstReserved:
            waited.append(False)  # SKIP LOCKED: each candidate held by another claim, and busy
            return hotpath.FirstReserved(served=None, busy=list(task_ids))

        def lock(*, task_id: int, cap: int | None, wait: bool) -> int | None:
            waited.append(wait)
            return real_lock(task_id=task_id, cap=cap, wait=wait)

        monkeypatch.setattr(hotpath, "reservation_take_first", every_task_locked_by_another)
        monkeypatch.setattr(hotpath, "task_lock", lock)
        answered = services.annotation_submit_and_claim(
            project=project, annotator=alice, assignment_id=held.pk, grade=1
        )
        assert answered.annotation.pk is not None
        assert answered.claim is not None and answered.claim.status == "task"
        # The answer's transaction tried without waiting; the claim of its own waited for the lock.
        assert waited[0] is False and waited[-1] is True
        assert_counters_match(project)

    def test_a_throttled_sweep_still_frees_an_expired_task_before_answering_empty(
        self, settings: Any, lena: User, alice: User, bob: User, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        settings.JUDGING_EXPIRY_SWEEP_SECONDS = 3600
        monkeypatch.setattr(services, "_last_expiry_sweep", {})
        project = build_project(lead=lena, annotators=[alice, bob], topics=1, docs_per_topic=2, overlap=1)
        mine = services.task_claim(project=project, annotator=alice).assignment  # starts the sweep period
        theirs = services.task_claim(project=project, annotator=bob).assignment
        assert mine is not None and theirs is not None
        an_hour_ago = timezone.now() - timedelta(hours=1)
        Assignment.objects.filter(pk=theirs.pk).update(reserved_at=an_hour_ago - timedelta(minutes=30),
                                                       expires_at=an_hour_ago)  # fmt: skip
        answered = services.annotation_submit_and_claim(
            project=project, annotator=alice, assignment_id=mine.pk, grade=2
        )
        assert answered.claim is not None and answered.claim.status == "task"
        assert answered.claim.assignment is not None and answered.claim.assignment.task_id == theirs.task_id
        assert_counters_match(project)

    def test_a_removed_annotators_answer_is_kept_without_a_claim(self, lena: User, alice: User) -> None:
        project = build_project(lead=lena, annotators=[alice])
        held = services.task_claim(project=project, annotator=alice).assignment
        assert held is not None
        ProjectMembership.objects.filter(project=project, user=alice).delete()
        answered = services.annotation_submit_and_claim(
            project=project, annotator=alice, assignment_id=held.pk, grade=2
        )
        assert answered.claim is None
        assert Annotation.objects.get(assignment=held).grade == 2


def _hot_path_statements(queries: CaptureQueriesContext) -> list[str]:
    """The statements on the judging tables, less the quality recompute's request (after the commit)."""
    return [q["sql"] for q in queries.captured_queries
            if "annotations_" in q["sql"] and "annotations_qualityrecompute" not in q["sql"]]  # fmt: skip


@pytest.mark.django_db(transaction=True)
class TestAnswerAndClaimInOneCall:
    """`hotpath.answer_and_claim`, PostgreSQL's `annotations_answer_claim`: run as a request runs it (in
    autocommit), the answer and the next claim are one statement, all or nothing; where the claim would
    wait for another claim's locks, the answer commits and the claim is made on its own, waiting."""

    def test_the_answer_and_the_claim_are_one_statement(
        self, settings: Any, lena: User, alice: User, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        settings.JUDGING_EXPIRY_SWEEP_SECONDS = settings.JUDGING_OPEN_TOTALS_SECONDS = 3600
        monkeypatch.setattr(services, "_last_expiry_sweep", {})
        project = build_project(lead=lena, annotators=[alice], topics=1, docs_per_topic=6, overlap=2)
        held = services.task_claim(project=project, annotator=alice).assignment  # sweeps, counts open tasks
        assert held is not None and not connection.in_atomic_block
        with CaptureQueriesContext(connection) as queries:
            answered = services.annotation_submit_and_claim(
                project=project, annotator=alice, assignment_id=held.pk, grade=3
            )
        statements = _hot_path_statements(queries)
        assert len(statements) == 1 and "annotations_answer_claim(" in statements[0], statements
        assert answered.claim is not None and answered.claim.status == "task"
        assert answered.claim.assignment is not None and answered.claim.assignment.task_id != held.task_id
        assert Annotation.objects.get(assignment=held).grade == 3
        assert_counters_match(project)

    def test_a_claim_that_fails_takes_the_answer_back_with_it(self, lena: User, alice: User) -> None:
        project = build_project(lead=lena, annotators=[alice])
        held = services.task_claim(project=project, annotator=alice).assignment
        assert held is not None
        # The reservation's insert fails inside the call, after the answer's writes.
        with connection.cursor() as cursor:
            cursor.execute(
                "CREATE FUNCTION pg_temp.no_reservation() RETURNS trigger LANGUAGE plpgsql AS "
                "$$ BEGIN RAISE EXCEPTION 'no reservation today'; END $$"
            )
            cursor.execute(
                "CREATE TRIGGER no_reservation BEFORE INSERT ON annotations_assignment "
                "FOR EACH ROW EXECUTE FUNCTION pg_temp.no_reservation()"
            )
        try:
            with pytest.raises(DatabaseError, match="no reservation today"):
                services.annotation_submit_and_claim(
                    project=project, annotator=alice, assignment_id=held.pk, grade=3
                )
        finally:
            with connection.cursor() as cursor:
                cursor.execute("DROP TRIGGER no_reservation ON annotations_assignment")
        # Nothing half-written: the client's retry answers the same reservation.
        assert not Annotation.objects.filter(assignment=held).exists()
        assert list(Assignment.objects.filter(annotator=alice).values_list("pk", "state")) == [
            (held.pk, Assignment.State.RESERVED)
        ]
        assert_counters_match(project)
        answered = services.annotation_submit_and_claim(
            project=project, annotator=alice, assignment_id=held.pk, grade=3
        )
        assert answered.claim is not None and answered.claim.status == "task"

    def test_when_every_candidate_is_locked_it_claims_after_the_commit_and_waits(
        self, lena: User, alice: User
    ) -> None:
        project = build_project(lead=lena, annotators=[alice], topics=1, docs_per_topic=4, overlap=1)
        held = services.task_claim(project=project, annotator=alice).assignment
        assert held is not None
        others = list(
            Task.objects.filter(project=project).exclude(pk=held.task_id).values_list("pk", flat=True)
        )
        locker = psycopg.connect(_database_url_for(connection.settings_dict))
        # Another claim holds every other task locked, for a moment.
        locker.execute("SELECT id FROM annotations_task WHERE id = ANY(%s) FOR NO KEY UPDATE", [others])
        release = threading.Timer(0.5, locker.commit)
        release.start()
        try:
            with answer_and_claim_outcomes() as calls:
                answered = services.annotation_submit_and_claim(
                    project=project, annotator=alice, assignment_id=held.pk, grade=1
                )
        finally:
            release.join()
            locker.close()
        assert calls == ["deferred"]  # answered; the call did not wait for the locks
        assert Annotation.objects.get(assignment=held).grade == 1
        # The claim of its own waited for the lock and served one of the tasks it was waiting for.
        assert answered.claim is not None and answered.claim.status == "task"
        assert answered.claim.assignment is not None and answered.claim.assignment.task_id in others
        assert_counters_match(project)


@pytest.mark.django_db
class TestPlainAnswerInOneStatement:
    """`hotpath.answer_plain`: an answer that needs no rule but the plain ones is one statement in
    PostgreSQL, and stores what the step-by-step path stores; anything else takes that path."""

    @staticmethod
    def held(project: Any, annotator: User, served_at: Any) -> Assignment:
        claim = services.task_claim(project=project, annotator=annotator)
        assert claim.assignment is not None
        Assignment.objects.filter(pk=claim.assignment.pk).update(reserved_at=served_at)
        return claim.assignment

    @pytest.mark.parametrize("kind", ["grade", "unclear", "skip"])
    def test_it_stores_what_the_step_by_step_path_stores(
        self, kind: str, lena: User, alice: User, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        if connection.vendor != "postgresql":
            pytest.fail("the one-statement answer is PostgreSQL's; run the tests on it")
        project = build_project(lead=lena, annotators=[alice], topics=1, docs_per_topic=4, overlap=2)
        project.min_seconds_per_task = 5
        project.save(update_fields=["min_seconds_per_task"])
        now = timezone.now()
        answer = {
            "grade": lambda **kw: services.annotation_submit(**kw, grade=3, comment=" why "),
            "unclear": lambda **kw: services.annotation_submit(**kw, unclear=True),
            "skip": lambda **kw: services.annotation_skip(**kw, comment="broken"),
        }[kind]
        stored = []
        for one_statement in (True, False):
            if not one_statement:
                monkeypatch.setattr(hotpath, "answer_plain", lambda *args, **kwargs: False)
            held = self.held(project, alice, now - timedelta(seconds=7.25))
            with CaptureQueriesContext(connection) as queries:
                made = answer(project=project, annotator=alice, assignment_id=held.pk, now=now)
            if one_statement:
                assert len(queries) == 1, [q["sql"] for q in queries]
            row = Annotation.objects.get(pk=made.pk)
            fields = ["grade", "seconds_spent", "skipped", "unclear", "too_fast", "comment", "created_at"]
            assert [getattr(made, f) for f in fields] == [getattr(row, f) for f in fields]
            assert made.task_id == held.task_id == row.task_id
            stored.append(
                ([getattr(row, f) for f in fields], Assignment.objects.get(pk=held.pk).state, row.counts)
            )
        assert stored[0] == stored[1]
        assert stored[0][0][1] == 7.25
        assert_counters_match(project)

    def test_refusals_and_too_fast_answers_take_the_step_by_step_path(
        self, lena: User, alice: User, bob: User
    ) -> None:
        project = build_project(lead=lena, annotators=[alice, bob], topics=1, docs_per_topic=4)
        project.min_seconds_per_task = 5
        project.save(update_fields=["min_seconds_per_task"])
        now = timezone.now()
        held = self.held(project, alice, now - timedelta(seconds=2))
        with pytest.raises(services.TooFast):
            services.annotation_submit(
                project=project, annotator=alice, assignment_id=held.pk, grade=2, now=now
            )
        with pytest.raises(services.AssignmentNotFound):  # another annotator's task
            services.annotation_submit(
                project=project, annotator=bob, assignment_id=held.pk, grade=2, now=now
            )
        # A skip is never too fast; then the task is answered, and a second answer is refused.
        services.annotation_skip(project=project, annotator=alice, assignment_id=held.pk, now=now)
        with pytest.raises(services.AlreadyAnswered):
            services.annotation_submit(
                project=project, annotator=alice, assignment_id=held.pk, grade=2, now=now
            )
        # An expired reservation whose place nobody took is still answered (the step-by-step path).
        late = self.held(project, alice, now - timedelta(hours=2))
        Assignment.objects.filter(pk=late.pk).update(expires_at=now - timedelta(hours=1))
        answer = services.annotation_submit(
            project=project, annotator=alice, assignment_id=late.pk, grade=1, now=now
        )
        assert answer.grade == 1 and answer.counts
        assert_counters_match(project)


@pytest.mark.django_db
class TestClaimsReadAnIndex:
    def test_fresh_tasks_come_in_rank_order_from_the_annotators_starting_point(
        self, lena: User, alice: User
    ) -> None:
        project = build_project(lead=lena, annotators=[alice], topics=3, docs_per_topic=10, overlap=1)
        ranks = dict(Task.objects.filter(project=project).values_list("id", "rank"))
        # The rank is the id scrambled: distinct, and not in id order.
        assert all(rank == task_id * 2_654_435_761 % TASK_RANK_MODULUS for task_id, rank in ranks.items())
        assert len(set(ranks.values())) == len(ranks)
        start = sorted(ranks.values())[12]
        seed = start + 5 * TASK_RANK_MODULUS  # a 62-bit seed lands on the ring at seed % modulus
        ProjectMembership.objects.filter(project=project, user=alice).update(shuffle_seed=seed)
        served = [task.pk for task in answer_all(project, alice)]
        expected = sorted(ranks, key=lambda task_id: (ranks[task_id] < start, ranks[task_id]))
        assert served == expected

    def test_the_fresh_read_is_an_index_range_without_a_sort(self, lena: User, alice: User) -> None:
        if connection.vendor != "postgresql":
            pytest.fail("the claim path is tuned for PostgreSQL; run the tests on it")
        project = build_project(lead=lena, annotators=[alice], topics=4, docs_per_topic=50, gold_per_topic=5)
        membership = ProjectMembership.objects.get(project=project, user=alice)
        with connection.cursor() as cursor:
            # Test tables are small, and a sequential scan and a sort cost little there; forbid them (for
            # this transaction) to see whether an index serves the claim's order by itself.
            for setting in ("enable_seqscan", "enable_bitmapscan", "enable_sort"):
                cursor.execute(f"SET LOCAL {setting} = off")
            for is_gold in (False, True):
                sql, params = hotpath.fresh_candidates_sql(
                    project_id=project.pk, user_id=alice.pk, is_gold=is_gold, gold_overlap=None,
                    start=selectors.rank_start(membership.shuffle_seed), wrapped=False, limit=16,
                )  # fmt: skip
                cursor.execute("EXPLAIN " + sql, params)
                plan = "\n".join(row[0] for row in cursor.fetchall())
                assert "Index" in plan and ("task_claimable_rank" in plan or "task_rank" in plan), plan
                assert "Sort" not in plan, plan

    def test_the_read_round_the_rings_end_takes_the_rank_index_in_order_unforced(
        self, lena: User, alice: User
    ) -> None:
        """The planner's own choice, nothing forbidden: with the "never held it" probe written as a NULL
        test, PostgreSQL took it to pass one candidate in 200 and, for a window of 16, read every fresh
        task before the annotator's starting point with a bitmap scan and sorted them (1.4 ms a claim at
        20,000 tasks, growing with the project). The window must be read off the rank index in order."""
        if connection.vendor != "postgresql":
            pytest.fail("the claim path is tuned for PostgreSQL; run the tests on it")
        project = build_project(lead=lena, annotators=[alice], topics=20, docs_per_topic=500)
        answer_all(project, alice, limit=3)
        # A project well under way: four tasks in five full, the rest fresh.
        ids = sorted(Task.objects.filter(project=project, assigned_count=0).values_list("id", flat=True))
        full = [task_id for position, task_id in enumerate(ids) if position % 5]
        Task.objects.filter(id__in=full).update(assigned_count=project.overlap)
        ranks = sorted(
            Task.objects.filter(project=project, is_gold=False, assigned_count=0).values_list(
                "rank", flat=True
            )
        )
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {hotpath.TASK}")
            for start in (ranks[len(ranks) // 2], ranks[-10]):  # most of the ring lies before the start
                for wrapped in (False, True):
                    sql, params = hotpath.fresh_candidates_sql(
                        project_id=project.pk, user_id=alice.pk, is_gold=False, gold_overlap=None,
                        start=start, wrapped=wrapped, limit=services.CLAIM_WINDOWS[0],
                    )  # fmt: skip
                    cursor.execute("EXPLAIN " + sql, params)
                    plan = "\n".join(row[0] for row in cursor.fetchall())
                    assert (
                        "Index Scan using task_claimable_rank" in plan or "Index Scan using task_rank" in plan
                    ), plan
                    assert f"Bitmap Heap Scan on {hotpath.TASK}" not in plan and "Sort" not in plan, plan

    def test_the_claims_statements_run_their_generic_plans(self, lena: User, alice: User) -> None:
        """Prepared statements run their generic plan (`plan_cache_mode`): left to choose, PostgreSQL
        planned the claim's counts-and-candidates statement afresh on every run, twice its own cost."""
        if connection.vendor != "postgresql":
            pytest.fail("the claim path is tuned for PostgreSQL; run the tests on it")
        project = build_project(lead=lena, annotators=[alice], topics=4, docs_per_topic=10)
        answer_all(project, alice, limit=12)  # more runs than psycopg's prepare threshold
        with connection.cursor() as cursor:
            cursor.execute("SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements")
            prepared = cursor.fetchall()
        counts = [row for row in prepared if "cardinality(x.fresh)" in row[0]]
        assert counts and all(generic > 0 for _, generic, _ in counts), prepared
        assert all(custom == 0 for _, _, custom in prepared), prepared

    @pytest.mark.parametrize("sign_in", ["token", "session"])
    def test_the_sign_ins_read_the_user_and_the_membership_by_their_keys(
        self, lena: User, alice: User, bob: User, sign_in: str
    ) -> None:
        """The API token's and the judge page's sign-ins read the user and their membership of the URL's
        project with the token or the session. Joined on `m.id = (a subquery)`, the generic plan hashed
        every membership of every project on every request (and, at PostgreSQL's default random_page_cost,
        every user: the connections set 1.1)."""
        if connection.vendor != "postgresql":
            pytest.fail("the sign-ins are tuned for PostgreSQL; run the tests on it")
        build_project(lead=lena, annotators=[alice, bob], topics=2, docs_per_topic=3)
        with connection.cursor() as cursor:
            cursor.execute("SHOW random_page_cost")
            assert cursor.fetchone()[0] == "1.1"
            # The tables here fit in a page, which a sequential scan reads for less than an index: forbid
            # it (for this transaction) to see how the statement can reach each row.
            cursor.execute("SET LOCAL enable_seqscan = off")
        if sign_in == "token":
            statement, values = hotpath.token_member_statement(), ["some-project", "some-key"]
        else:
            statement, values = (
                hotpath.session_member_statement(),
                ["some-project", "some-key", timezone.now()],
            )
        with sqlrows.cursor() as cursor:  # server-side parameters: the plan is made without their values
            cursor.execute("EXPLAIN " + statement, values)
            plan = "\n".join(row[0] for row in cursor.fetchall())
        assert "Hash" not in plan and "Merge" not in plan and "Seq Scan" not in plan, plan
        assert "projectmembership" in plan and "Full" not in plan, plan

    def test_the_annotators_own_counts_probe_each_task_by_its_key_in_the_generic_plan(
        self, lena: User, alice: User
    ) -> None:
        """A prepared statement runs on a generic plan after a few runs. As a join, the own counts' generic
        plan was a hash join over a sequential scan of every task of every project: 2 ms a claim at
        20,000 tasks and growing with the table. Each task must be read by its key instead."""
        if connection.vendor != "postgresql":
            pytest.fail("the claim path is tuned for PostgreSQL; run the tests on it")
        project = build_project(lead=lena, annotators=[alice], topics=20, docs_per_topic=100)
        answer_all(project, alice, limit=5)
        sql, params = hotpath.own_counts_sql(
            project_id=project.pk, user_id=alice.pk, now=timezone.now(), overlap=project.overlap,
            gold_overlap=project.gold_overlap,
        )  # fmt: skip
        with connection.cursor() as cursor:
            # The test's tables are too small for the planner to prefer a hash join; forbid the nested loop
            # (for this transaction) to see whether the statement leaves it any other way to read tasks.
            cursor.execute("SET LOCAL enable_nestloop = off")
            cursor.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        # Alone, and as a claim reads them: with its first candidates in the same statement.
        combined = hotpath.own_counts_with_candidates_sql(
            project_id=project.pk, user_id=alice.pk, now=timezone.now(), overlap=project.overlap,
            gold_overlap=project.gold_overlap, started_cap=project.overlap, seed=7, start=0, window=16,
        )  # fmt: skip
        for statement, values in ((sql, params), combined):
            with sqlrows.cursor() as cursor:  # server-side parameters: the plan is made without their values
                cursor.execute("EXPLAIN " + statement, values)
                plan = "\n".join(row[0] for row in cursor.fetchall())
            assert "Hash Join" not in plan and "Merge Join" not in plan, plan
            assert f"Seq Scan on {hotpath.TASK}" not in plan and "annotations_task_pkey" in plan, plan

    def test_the_counts_and_first_candidates_read_together_are_those_read_apart(
        self, lena: User, alice: User, bob: User
    ) -> None:
        project = build_project(
            lead=lena, annotators=[alice, bob], topics=3, docs_per_topic=12, gold_per_topic=2
        )
        answer_all(project, bob, limit=9)
        answer_all(project, alice, limit=3)
        fresh_ranks = sorted(
            Task.objects.filter(project=project, is_gold=False, assigned_count=0).values_list(
                "rank", flat=True
            )
        )
        seed = 3 * TASK_RANK_MODULUS + fresh_ranks[len(fresh_ranks) // 2]  # fresh tasks on both sides
        ProjectMembership.objects.filter(project=project, user=alice).update(shuffle_seed=seed)
        now, where = timezone.now(), {"project_id": project.pk, "user_id": alice.pk}
        for window in (1, 4, 16):
            counts, first = hotpath.own_counts_with_candidates(
                **where, now=now, overlap=project.overlap, gold_overlap=project.gold_overlap,
                started_cap=project.overlap, seed=seed, start=selectors.rank_start(seed), window=window,
            )  # fmt: skip
            assert counts == selectors.own_counts(project=project, annotator=alice, now=now)
            if connection.vendor != "postgresql":
                assert first is None
                continue
            assert first is not None
            started = hotpath.started_candidates_sql(
                **where, overlap=project.overlap, seed=seed, limit=window
            )
            fresh = hotpath.fresh_candidates_sql(
                **where, is_gold=False, gold_overlap=None, start=selectors.rank_start(seed), wrapped=False,
                limit=window,
            )  # fmt: skip
            assert first.started == hotpath.candidate_ids(started) and first.started
            assert first.fresh == hotpath.candidate_ids(fresh) and first.fresh
            wrapped = hotpath.fresh_candidates_sql(
                **where, is_gold=False, gold_overlap=None, start=selectors.rank_start(seed), wrapped=True,
                limit=window,
            )  # fmt: skip
            if len(first.fresh) == window:  # a full window: the part round the ring's end is not read
                assert first.fresh_wrapped is None
            else:
                assert first.fresh_wrapped == hotpath.candidate_ids(wrapped) and first.fresh_wrapped

    def test_a_claim_costs_no_more_queries_in_a_large_project_than_in_a_small_one(
        self, lena: User, alice: User, bob: User
    ) -> None:
        small = build_project(lead=lena, annotators=[alice], topics=1, docs_per_topic=5, slug="small")
        large = build_project(lead=lena, annotators=[bob], topics=20, docs_per_topic=100, slug="large")
        counted = []
        for project, person in ((small, alice), (large, bob)):
            answer_all(project, person, limit=2)
            with CaptureQueriesContext(connection) as queries:
                assert services.task_claim(project=project, annotator=person).status == "task"
            counted.append(len(queries))
        # The large one may even need fewer: the small one's ring can run out and be read from its start.
        assert counted[1] <= counted[0], counted


@pytest.mark.django_db
class TestLoadSettings:
    def test_open_totals_are_counted_once_per_period_in_a_process(
        self, settings: Any, lena: User, alice: User, bob: User, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        settings.JUDGING_OPEN_TOTALS_SECONDS = 60
        clock = [1000.0]
        monkeypatch.setattr(selectors.time, "monotonic", lambda: clock[0])
        monkeypatch.setattr(selectors, "_open_totals_cache", {})
        project = build_project(lead=lena, annotators=[alice, bob], topics=1, docs_per_topic=6, overlap=1)
        assert selectors.queue_counts(project=project, annotator=alice).available_ordinary == 6
        answer_all(project, bob, limit=2)  # bob fills two tasks: alice's figure lags until the next count
        with CaptureQueriesContext(connection) as queries:
            lagging = selectors.queue_counts(project=project, annotator=alice)
        assert lagging.available_ordinary == 6 and len(queries) == 1  # her own assignments only
        # Serving is exact all the same: alice is never given a task bob filled.
        served = answer_all(project, alice)
        assert len(served) == 4
        clock[0] += 61
        assert selectors.queue_counts(project=project, annotator=alice).available_ordinary == 0
        # A change of overlap is a new key: counted at once.
        project.overlap = 2
        project.save(update_fields=["overlap"])
        assert selectors.queue_counts(project=project, annotator=alice).available_ordinary == 2

    def test_exact_counts_with_the_period_at_zero(self, lena: User, alice: User, bob: User) -> None:
        project = build_project(lead=lena, annotators=[alice, bob], topics=1, docs_per_topic=6, overlap=1)
        assert selectors.queue_counts(project=project, annotator=alice).available_ordinary == 6
        answer_all(project, bob, limit=2)
        assert selectors.queue_counts(project=project, annotator=alice).available_ordinary == 4

    def test_a_throttled_sweep_still_frees_an_expired_task_before_answering_empty(
        self, settings: Any, lena: User, alice: User, bob: User, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        settings.JUDGING_EXPIRY_SWEEP_SECONDS = 3600
        monkeypatch.setattr(services, "_last_expiry_sweep", {})
        project = build_project(lead=lena, annotators=[alice, bob], topics=1, docs_per_topic=1, overlap=1)
        held = services.task_claim(
            project=project, annotator=alice
        ).assignment  # this sweep starts the period
        assert held is not None
        an_hour_ago = timezone.now() - timedelta(hours=1)
        Assignment.objects.filter(pk=held.pk).update(reserved_at=an_hour_ago - timedelta(minutes=30),
                                                     expires_at=an_hour_ago)  # fmt: skip
        claim = services.task_claim(project=project, annotator=bob)  # within the period: no sweep first...
        assert claim.status == "task" and claim.assignment.task_id == held.task_id  # ...but before "empty"
        assert not Assignment.objects.filter(pk=held.pk).exists()
        assert_counters_match(project)
