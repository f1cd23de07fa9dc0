"""The pool pages, the pools API and the `pool_runs` command: who may use them, what they show, and that
they create the same pool the services do."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client

from annotations import services as judging
from annotations.models import Project, Task
from evalplatform.models import Team
from evalplatform.teams import team_member_set
from monitoring.files.models import Run
from monitoring.management.commands.pool_runs import Command as PoolRuns
from monitoring.pooling import services as pooling
from monitoring.pooling.models import JudgingPool
from tests.conftest import QueuedTasks
from tests.monitoring.test_pooling import bob, built, judge, project, reprioritise, runs  # noqa: F401 - fixtures

__all__ = ["bob", "project", "runs"]


@pytest.fixture
def lead(client: Client, lena: User, team: Team) -> Client:
    """Lena, the project's lead, a viewer of its team: she may pool the team's runs."""
    team_member_set(team=team, user=lena, role="viewer")
    client.force_login(lena)
    return client


@pytest.fixture
def judged_pool(project: Project, runs: list[Run], alice: User) -> JudgingPool:
    pool = built(project, runs, strategy="mtf", budget=9)
    judge(project, alice, lambda task: 3 if task.document.doc_id.endswith(("-7", "-6")) else 0, count=4)
    return reprioritise(pool)


@pytest.mark.django_db
class TestPages:
    def test_it_creates_a_pool_from_the_form_and_queues_its_build(
        self, lead: Client, project: Project, runs: list[Run], queued: QueuedTasks,
        django_capture_on_commit_callbacks: Any,
    ) -> None:  # fmt: skip
        page = lead.get("/projects/web/pools/")
        assert page.status_code == 200 and 'id="pool-form"' in page.content.decode()
        assert all(run.name in page.content.decode() for run in runs)
        with django_capture_on_commit_callbacks(execute=True):
            response = lead.post(
                "/projects/web/pools/",
                {
                    "runs": [runs[0].pk, runs[1].pk],
                    "strategy": "take-rbp",
                    "budget": 6,
                    "depth": 5,
                    "seed": 0,
                },
            )
        pool = JudgingPool.objects.get()
        assert response.status_code == 302 and response["Location"] == f"/projects/web/pools/{pool.pk}/"
        assert (pool.strategy, pool.budget, pool.depth, pool.created_by.username) == (
            "take-rbp",
            6,
            5,
            "lena",
        )
        assert set(pool.runs.all()) == {runs[0], runs[1]}
        assert pool.simulation_measure == "map"  # a form without the field: the default
        assert queued.names() == ["monitoring.tasks.pool_build"]

    def test_the_form_takes_the_simulations_measure_in_any_spelling_blank_map(
        self, lead: Client, project: Project, runs: list[Run], queued: QueuedTasks
    ) -> None:
        page = lead.get("/projects/web/pools/").content.decode()
        assert '<label for="id_simulation_measure">Rank the simulated runs by</label>' in page
        assert 'name="simulation_measure" value="map"' in page
        body = {"runs": [runs[0].pk, runs[1].pk], "strategy": "depth", "budget": 3, "depth": 5, "seed": 0}
        for measure, stored in ((" nDCG@10 ", "nDCG@10"), ("P.5", "P.5"), ("", "map")):
            response = lead.post("/projects/web/pools/", {**body, "simulation_measure": measure})
            pool = JudgingPool.objects.get()
            assert response.status_code == 302 and pool.simulation_measure == stored, response.content
            listing = lead.get("/projects/web/pools/").content.decode()
            row = listing[listing.index(f'<a href="/projects/web/pools/{pool.pk}/">') :]
            assert f"<td><code>{stored}</code></td>" in row[: row.index("</tr>")]  # the list names it
            pool.delete()  # one pool at a time: the next one may be created

    def test_the_form_refuses_a_measure_it_cannot_rank_by_saying_why(
        self, lead: Client, project: Project, runs: list[Run]
    ) -> None:
        body = {"runs": [runs[0].pk], "strategy": "depth", "budget": 3, "depth": 5, "seed": 0}
        for measure, reason in (
            ("ndgc_cut_10", "did you mean &#x27;ndcg_cut_10&#x27;"),
            ("relstring", "relstring: give one numeric measure, such as map or ndcg_cut_10"),
            ("map P_5", "unknown measure &#x27;map P_5&#x27;"),
            ("x" * 65, "A measure name is at most 64 characters."),
        ):
            response = lead.post("/projects/web/pools/", {**body, "simulation_measure": measure})
            page = response.content.decode()
            assert response.status_code == 400 and reason in page, measure
            field = page[page.index('<label for="id_simulation_measure">') :]
            assert reason in field[: field.index("</div>\n</div>")]  # under the field, with its value kept
            assert f'name="simulation_measure" value="{measure}"' in field
        assert not JudgingPool.objects.exists()

    def test_it_refuses_a_bad_form_with_its_reasons(
        self, lead: Client, project: Project, runs: list[Run]
    ) -> None:
        response = lead.post("/projects/web/pools/", {"runs": [], "strategy": "best", "depth": 0})
        body = response.content.decode()
        assert response.status_code == 400 and "This field is required" in body and "best" in body
        assert not JudgingPool.objects.exists()

    def test_it_offers_no_archived_run_and_refuses_one_chosen_anyway(
        self, lead: Client, project: Project, runs: list[Run]
    ) -> None:
        archived = runs[1]
        Run.objects.filter(pk=archived.pk).update(archived=True)
        page = lead.get("/projects/web/pools/").content.decode()
        assert f"{runs[0].name} (#{runs[0].pk})" in page and f"{archived.name} (#{archived.pk})" not in page
        body = {"runs": [runs[0].pk, archived.pk], "strategy": "depth", "budget": 3, "depth": 5, "seed": 0}
        refused = lead.post("/projects/web/pools/", body)
        assert refused.status_code == 400 and f"The run {archived.name} (#{archived.pk}) is archived" in (
            refused.content.decode()
        )
        api = lead.post("/api/projects/web/pools/", body, content_type="application/json")
        assert api.status_code == 400 and "is archived" in api.json()["runs"]["1"][0]
        assert not JudgingPool.objects.exists()

    def test_a_lead_outside_the_team_reads_pools_but_may_not_pool_its_runs(
        self, client: Client, lena: User, project: Project, runs: list[Run]
    ) -> None:
        client.force_login(lena)
        page = client.get("/projects/web/pools/")
        assert page.status_code == 200 and 'id="pool-not-allowed"' in page.content.decode()
        response = client.post(
            "/projects/web/pools/", {"runs": [runs[0].pk], "strategy": "depth", "budget": 3}
        )
        assert response.status_code == 403 and not JudgingPool.objects.exists()

    def test_annotators_never_see_pool_internals(
        self, client: Client, alice: User, judged_pool: JudgingPool
    ) -> None:
        client.force_login(alice)
        base = f"/projects/web/pools/{judged_pool.pk}/"
        for path in ("/projects/web/pools/", base, base + "yield.csv", base + "state.json"):
            assert client.get(path).status_code == 403, path
        for path in ("/api/projects/web/pools/", f"/api/projects/web/pools/{judged_pool.pk}/progress/"):
            assert client.get(path).status_code == 403, path
        judge_page = client.get("/projects/web/judge/").content.decode()
        assert "priority" not in judge_page and "pool" not in judge_page.lower()

    def test_a_pools_page_shows_its_strategy_progress_and_yield_with_numbers_and_csv(
        self, lead: Client, judged_pool: JudgingPool
    ) -> None:
        page = lead.get(f"/projects/web/pools/{judged_pool.pk}/").content.decode()
        assert f"Pool #{judged_pool.pk}: mtf" in page
        assert (
            f"{judged_pool.judged} / 9" in page and 'id="figure-yield"' in page and 'id="yield-table"' in page
        )
        assert "3 pooled pairs left out" in page  # x0, x1, x2
        rows = list(
            csv.reader(
                io.StringIO(lead.get(f"/projects/web/pools/{judged_pool.pk}/yield.csv").content.decode())
            )
        )
        assert rows[0] == ["judged", "relevant_found", "relevant_share"]
        assert [int(row[1]) for row in rows[1:]] == judged_pool.yield_curve and len(rows) == 5
        listing = lead.get("/projects/web/pools/").content.decode()
        assert f'href="/projects/web/pools/{judged_pool.pk}/"' in listing

    def test_the_leads_project_page_links_to_the_pools(self, lead: Client, project: Project) -> None:
        assert 'href="/projects/web/pools/"' in lead.get("/projects/web/").content.decode()

    def test_re_order_now_queues_one_reprioritisation(
        self, lead: Client, judged_pool: JudgingPool, queued: QueuedTasks
    ) -> None:
        lead.post(f"/projects/web/pools/{judged_pool.pk}/refresh/")
        lead.post(f"/projects/web/pools/{judged_pool.pk}/refresh/")
        assert queued.names() == ["monitoring.tasks.pool_reprioritise"]


@pytest.mark.django_db
class TestApi:
    def test_it_creates_lists_and_reads_a_pool(
        self, lead: Client, project: Project, runs: list[Run], queued: QueuedTasks,
        django_capture_on_commit_callbacks: Any,
    ) -> None:  # fmt: skip
        with django_capture_on_commit_callbacks(execute=True):
            created = lead.post(
                "/api/projects/web/pools/",
                {"runs": [run.pk for run in runs], "strategy": "bandit-mm-ns", "budget": 8, "depth": 6},
                content_type="application/json",
            )
        assert created.status_code == 202, created.content
        body = created.json()
        assert (body["strategy"], body["budget"], body["adaptive"], body["status"]) == (
            "bandit-mm-ns",
            8,
            True,
            "pending",
        )
        assert body["url"].endswith(f"/api/projects/web/pools/{body['id']}/")
        assert pooling.pool_build_run(pool_id=body["id"]).status == "done"
        detail = lead.get(f"/api/projects/web/pools/{body['id']}/").json()
        assert detail["status"] == "done" and detail["figures"]["tasks_created"] == 8
        assert detail["figures"]["stage"] == "judging" and detail["figures"]["skipped_missing"] == 3
        listing = lead.get("/api/projects/web/pools/").json()
        assert [row["id"] for row in listing["results"]] == [body["id"]]

    def test_its_progress_gives_the_yield_after_each_judgment(
        self, lead: Client, judged_pool: JudgingPool
    ) -> None:
        progress = lead.get(f"/api/projects/web/pools/{judged_pool.pk}/progress/").json()
        assert progress["judged"] == 4 and progress["budget"] == 9
        assert [point["relevant"] for point in progress["yield_curve"]] == judged_pool.yield_curve
        assert [point["judged"] for point in progress["yield_curve"]] == [1, 2, 3, 4]

    def test_it_refuses_another_teams_run_naming_it(
        self, lead: Client, project: Project, other_team: Team, otto: User
    ) -> None:
        from monitoring.files import uploads
        from tests.monitoring.conftest import upload

        foreign = uploads.run_upload(
            team=other_team, upload=upload("f.run", "q0 Q0 d0-1 1 2.0 f\n"), uploaded_by=otto
        )
        response = lead.post(
            "/api/projects/web/pools/", {"runs": [foreign.pk], "strategy": "depth", "budget": 3},
            content_type="application/json",
        )  # fmt: skip
        assert response.status_code == 400
        assert response.json() == {"runs": {"0": [f"The project's team has no run {foreign.pk}."]}}


@pytest.mark.django_db
class TestCommand:
    def test_it_pools_runs_by_name_and_prints_json(self, project: Project, runs: list[Run]) -> None:
        out = io.StringIO()
        call_command(
            "pool_runs", "--project", "web", "--run", "up", "--run", "down", "--strategy", "depth", "--budget", "5",
            "--depth", "4", "--json", stdout=out,
        )  # fmt: skip
        data = json.loads(out.getvalue())
        pool = JudgingPool.objects.get()
        assert data["pool"] == pool.pk and data["runs"] == ["up", "down"] and data["stage"] == "judging"
        assert (data["tasks_created"], data["pending"], data["skipped_missing"]) == (5, 5, 3)
        assert data["simulation_measure"] == pool.simulation_measure == "map"
        assert Task.objects.filter(project=project, priority__isnull=False).count() == 5

    def test_m_ranks_the_simulations_runs_by_a_measure_of_the_registry(
        self, project: Project, runs: list[Run]
    ) -> None:
        out = io.StringIO()
        call_command("pool_runs", "--project", "web", "--run", "up", "--strategy", "depth", "--budget", "3",
                     "-m", "P.5", stdout=out)  # fmt: skip
        pool = JudgingPool.objects.get()
        assert pool.simulation_measure == "P.5" and pool.simulation["measure"] == "P.5"
        assert "its simulation ranks the runs by P.5." in out.getvalue()
        JudgingPool.objects.all().delete()
        out = io.StringIO()
        call_command("pool_runs", "--project", "web", "--run", "up", "--strategy", "depth", "--budget", "3",
                     "--measure", " ndcg_cut.10 ", "--json", stdout=out)  # fmt: skip
        assert json.loads(out.getvalue())["simulation_measure"] == "ndcg_cut.10"
        JudgingPool.objects.all().delete()
        for measure, reason in (
            ("ndgc_cut_10", "-m/--measure: unknown measure 'ndgc_cut_10'; did you mean 'ndcg_cut_10'"),
            ("relstring", "-m/--measure: relstring: give one numeric measure"),
            ("P.5,10", "-m/--measure: P.5,10: give one numeric measure"),
        ):
            with pytest.raises(CommandError) as refused:
                call_command("pool_runs", "--project", "web", "--run", "up", "--strategy", "depth", "--budget", "3",
                             "-m", measure)  # fmt: skip
            assert str(refused.value).startswith(reason), refused.value
        assert not JudgingPool.objects.exists()
        usage = PoolRuns().create_parser("manage.py", "pool_runs").format_help()
        assert "-m MEASURE, --measure MEASURE" in usage and "simulate_pooling's -m" in " ".join(usage.split())

    def test_it_says_what_is_wrong(self, project: Project, runs: list[Run]) -> None:
        with pytest.raises(CommandError, match="no run named 'nope'"):
            call_command(
                "pool_runs", "--project", "web", "--run", "nope", "--strategy", "depth", "--budget", "5"
            )
        with pytest.raises(CommandError, match="no project 'gone'"):
            call_command(
                "pool_runs", "--project", "gone", "--run", "up", "--strategy", "depth", "--budget", "5"
            )
        with pytest.raises(CommandError, match="at least 1"):
            call_command(
                "pool_runs", "--project", "web", "--run", "up", "--strategy", "depth", "--budget", "0"
            )
        assert not JudgingPool.objects.exists()

    def test_its_pool_serves_the_project_as_the_pages_do(
        self, project: Project, runs: list[Run], alice: User
    ) -> None:
        call_command(
            "pool_runs",
            "--project",
            "web",
            "--run",
            "mid",
            "--strategy",
            "depth",
            "--budget",
            "3",
            stdout=io.StringIO(),
        )
        project.refresh_from_db()  # as each request reads it: the pool gave it priorities
        served = [task.document.doc_id for task in judge(project, alice, lambda task: 1, count=3)]
        assert served == ["d0-2", "d1-2", "d2-2"]  # the run's first document of each topic, topics in turn
        # The project had no other task: the budget spent, the queue is empty.
        assert judging.task_claim(project=project, annotator=alice).status == "empty"


@pytest.mark.django_db
def test_the_pools_list_reads_a_fixed_number_of_queries(
    lead: Client, project: Project, runs: list[Run], django_assert_max_num_queries: Any
) -> None:
    """The list page's queries do not grow with the pools listed (one pool, then three)."""
    first = built(project, runs, strategy="depth", budget=3)
    with django_assert_max_num_queries(25) as one:
        assert lead.get("/projects/web/pools/").status_code == 200
    ceiling = len(one.captured_queries)  # now: the next request clears the connection's query log
    more = []
    for strategy in ("mtf", "take-rrf"):  # one pool at a time: each earlier one taken as done
        JudgingPool.objects.filter(project=project).update(stage=JudgingPool.Stage.DONE)
        more.append(built(project, runs, strategy=strategy, budget=3))
    with django_assert_max_num_queries(ceiling):
        page = lead.get("/projects/web/pools/").content.decode()
    assert all(f'href="/projects/web/pools/{pool.pk}/"' in page for pool in (first, *more))


@pytest.mark.django_db
def test_the_delete_command_deletes_the_pool_and_lets_the_project_pool_again(
    project: Project, runs: list[Run]
) -> None:
    pool = built(project, runs, strategy="depth", budget=5)
    with pytest.raises(CommandError, match="still judging"):
        call_command("pool_runs", "--project", "web", "--run", "up", "--strategy", "depth", "--budget", "3",
                     stdout=io.StringIO())  # fmt: skip
    with pytest.raises(CommandError, match="has no pool 0"):
        call_command("pool_delete", "--project", "web", "--pool", "0")
    out = io.StringIO()
    call_command("pool_delete", "--project", "web", "--pool", str(pool.pk), stdout=out)
    assert (
        out.getvalue().strip()
        == f"Pool {pool.pk} of web deleted, with the 5 tasks it created that nobody had started."
    )
    assert not JudgingPool.objects.exists() and not Task.objects.filter(project=project).exists()
    call_command("pool_runs", "--project", "web", "--run", "up", "--strategy", "depth", "--budget", "3",
                 stdout=io.StringIO())  # fmt: skip
    assert JudgingPool.objects.get().phase == "judging"
