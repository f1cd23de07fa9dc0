"""The pool page's planner (issue 23, point 6) and the gaps served before a pool (point 2): the topic set
size from the pool's runs' stored per-topic scores on the team's newest qrels version, the simulation
every strategy replays in the pool's build (page, CSV, API), and "judge the gaps" in a project that
serves by priority."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from annotations import services as judging
from annotations.models import Task
from evalcore import trec
from evalcore.pooling import PoolParams, simulate_pooling
from evalcore.retrieval import evaluate
from evalcore.reuse import topic_set_size_table
from monitoring.evaluations import loop
from monitoring.evaluations import services as evaluations
from monitoring.evaluations.services import read_qrels
from monitoring.files import uploads
from monitoring.models import QrelsSource
from monitoring.pooling import planner
from monitoring.pooling import services as pooling
from monitoring.pooling.charts import simulation_figure
from monitoring.pooling.models import JudgingPool
from monitoring.pooling.planner import SIMULATED, pool_planner_context, topic_scores
from monitoring.reuse.services import planner as planner_of
from tests.conftest import THEO, QueuedTasks, browser_log_in
from tests.monitoring.conftest import upload
from tests.monitoring.test_judging_loop import (  # noqa: F401 - fixtures
    build_version,
    carol,
    linked,
    run_text,
    signed_in,
)
from tests.monitoring.test_pooling import run_pending

__all__ = ["carol", "linked"]


def pool_of(linked: dict[str, Any], theo: User, **params: Any) -> JudgingPool:
    params = {"strategy": "mtf", "budget": None, "depth": 10, **params}
    pool = pooling.pool_create(project=linked["project"], runs=linked["runs"], created_by=theo, enqueue=False,
                               **params)  # fmt: skip
    assert pooling.pool_build_run(pool_id=pool.pk).status == "done", JudgingPool.objects.get(pk=pool.pk).error
    return JudgingPool.objects.get(pk=pool.pk)


def read_runs(linked: dict[str, Any]) -> list[Any]:
    return [trec.read_run(run.file.path) for run in linked["runs"]]


@pytest.mark.django_db
class TestSimulation:
    def test_the_build_stores_every_strategy_replayed_with_the_newest_version_as_the_oracle(
        self, linked: dict[str, Any], theo: User
    ) -> None:
        pool = pool_of(linked, theo, budget=12)
        simulation = pool.simulation
        assert simulation["qrels"] == linked["source"].pk and simulation["measure"] == "map"
        assert [curve["strategy"] for curve in simulation["strategies"]] == list(SIMULATED)
        qrels = read_qrels(linked["source"])
        for strategy, steps in ((c["strategy"], c["steps"]) for c in simulation["strategies"]):
            expected = simulate_pooling(
                read_runs(linked), qrels, PoolParams(strategy, budget=12, depth=10), step=simulation["step"],
                names=[run.name for run in linked["runs"]],
            )  # fmt: skip
            assert steps == [
                {"judged": s.judged, "relevant_found": s.relevant_found, "kendall_tau": s.kendall_tau}
                for s in expected
            ]
            assert steps[-1]["judged"] == 12

    def test_judging_every_pooled_pair_finds_every_relevant_one_and_agrees_with_the_oracle(
        self, linked: dict[str, Any], theo: User
    ) -> None:
        pool = pool_of(linked, theo)
        qrels = read_qrels(linked["source"])
        relevant = {
            (str(qrels.qids[code]), docno)
            for code, docno, rel in zip(qrels.qid_codes.tolist(), qrels.docno_strings(), qrels.rels.tolist(),
                                        strict=True)
            if rel >= 1
        }  # fmt: skip
        pooled = set()  # a direct loop over the run files: each run's top 10 on the qrels' topics
        for run in linked["runs"]:
            for line in Path(run.file.path).read_text().split("\n"):
                if line and int(line.split()[3]) <= 10:
                    pooled.add((line.split()[0], line.split()[2]))
        for steps in (curve["steps"] for curve in pool.simulation["strategies"]):
            assert steps[-1]["relevant_found"] == len(pooled & relevant)
            assert steps[-1]["kendall_tau"] == pytest.approx(1.0)

    def test_it_says_why_there_is_no_simulation_without_a_version(
        self, linked: dict[str, Any], theo: User
    ) -> None:
        QrelsSource.objects.filter(pk=linked["source"].pk).delete()
        pool = pool_of(linked, theo, budget=4)
        assert "no qrels version" in pool.simulation["reason"]
        page = signed_in(theo).get(f"/projects/web/pools/{pool.pk}/").content.decode()
        assert 'id="no-simulation"' in page and "no qrels version" in page
        assert "No qrels version of this project is a qrels source of the team yet" in page


@pytest.mark.django_db
class TestANewVersion:
    def test_it_queues_the_simulation_again_which_replays_every_strategy_on_the_new_version_once(
        self, linked: dict[str, Any], theo: User, carol: User, queued: QueuedTasks,
        django_capture_on_commit_callbacks: Any,
    ) -> None:  # fmt: skip
        pool = pool_of(linked, theo, budget=12)
        assert pool.simulation["qrels"] == linked["source"].pk
        with django_capture_on_commit_callbacks(execute=True):
            v2 = build_version(linked["project"], carol, list(Task.objects.filter(project=linked["project"])))
        sent = [(name, args) for name, args, _ in queued.sent]
        assert ("monitoring.tasks.pool_simulations_refresh", (v2.pk,)) in sent
        assert ("monitoring.tasks.qrels_build_rescore", (v2.pk,)) in sent  # beside the re-scoring
        assert planner.pool_simulations_refresh(build_id=v2.pk) == [pool.pk]
        v2_source = QrelsSource.objects.get(build=v2)
        pool.refresh_from_db()
        assert pool.simulation["qrels"] == v2_source.pk and pool.simulation["qrels_name"] == "web v2"
        qrels = read_qrels(v2_source)
        for curve in pool.simulation["strategies"]:
            expected = simulate_pooling(
                read_runs(linked), qrels, PoolParams(curve["strategy"], budget=12, depth=10),
                step=pool.simulation["step"], names=[run.name for run in linked["runs"]],
            )  # fmt: skip
            assert curve["steps"] == [
                {"judged": s.judged, "relevant_found": s.relevant_found, "kendall_tau": s.kendall_tau}
                for s in expected
            ]
        # v2 judges every task: more relevant pairs found by judging everything than on v1.
        assert pool.simulation["strategies"][0]["steps"][-1]["relevant_found"] > 0
        assert planner.pool_simulations_refresh(build_id=v2.pk) == []  # a re-delivered task: nothing
        assert planner.pool_simulations_refresh(build_id=linked["v1"].pk) == []  # already on the newest

    def test_a_pool_still_building_is_left_to_its_build(
        self, linked: dict[str, Any], theo: User, carol: User
    ) -> None:
        pool = pooling.pool_create(project=linked["project"], runs=linked["runs"], strategy="mtf", budget=4,
                                   depth=10, enqueue=False)  # fmt: skip
        v2 = build_version(linked["project"], carol, list(Task.objects.filter(project=linked["project"])))
        assert planner.pool_simulations_refresh(build_id=v2.pk) == []
        assert JudgingPool.objects.get(pk=pool.pk).simulation == {}


def evaluated_with(linked: dict[str, Any], measure: str) -> None:
    for run in linked["runs"]:
        evaluation = evaluations.evaluation_create(
            run=run, qrels=linked["source"], measures=[measure], enqueue=False
        )
        assert evaluations.evaluation_run(evaluation_id=evaluation.pk).status == "done"


@pytest.mark.django_db
class TestPlannerMeasure:
    def test_it_plans_from_the_measure_picked_by_its_registry_name(
        self, linked: dict[str, Any], theo: User
    ) -> None:
        pool = pool_of(linked, theo, budget=4)
        evaluated_with(linked, "ndcg_cut_10")
        qids, _, matrix = topic_scores(pool, linked["source"], measure="ndcg_cut.10")  # trec_eval's spelling
        qrels = read_qrels(linked["source"])
        columns = []
        for data in read_runs(linked):
            got, values = evaluate(qrels, data, ["ndcg_cut_10"]).per_query_array("ndcg_cut_10")
            columns.append(dict(zip(got.tolist(), values.tolist(), strict=True)))
        reference = np.array([[column[q] for column in columns] for q in qids])
        assert qids == ["q0", "q1", "q2"]
        np.testing.assert_allclose(matrix, reference)
        context = pool_planner_context(pool, measure="nDCG@10")  # ir-measures' spelling
        want = planner_of(reference, n_systems=2)  # the topic set size design, or why there is none
        assert (context["planner"], context["planner_reason"]) == (want["planner"], want["planner_reason"])
        assert context["planner_measure"] == "nDCG@10"
        assert {"map", "P_5", "ndcg_cut_10"} <= set(context["planner_measures"])

    def test_the_page_and_the_api_take_the_measure_and_refuse_an_unknown_one(
        self, linked: dict[str, Any], theo: User
    ) -> None:
        pool = pool_of(linked, theo, budget=4)
        evaluated_with(linked, "ndcg_cut_10")
        client = signed_in(theo)
        page = client.get(f"/projects/web/pools/{pool.pk}/?measure=ndcg_cut_10")
        assert page.status_code == 200
        text = page.content.decode()
        assert 'value="ndcg_cut_10"' in text and "per-topic ndcg_cut_10" in text
        want = pool_planner_context(pool, measure="ndcg_cut_10")
        if want["planner"] is None:  # the fixture's topics are alike: the grades may leave no variance
            assert want["planner_reason"] in text
        else:
            assert f'<td class="num">{want["planner"]["rows"][0]["ttest"]}</td>' in text
        body = client.get(f"/api/projects/web/pools/{pool.pk}/progress/?measure=ndcg_cut_10").json()
        assert body["planner_reason"] == want["planner_reason"]
        assert (body["planner"] or {}).get("rows") == (want["planner"] or {}).get("rows")
        assert body["planner_measure"] == "ndcg_cut_10" and "ndcg_cut_10" in body["planner_measures"]
        body = client.get(f"/api/projects/web/pools/{pool.pk}/progress/?measure=map").json()
        assert body["planner"]["rows"] == pool_planner_context(pool)["planner"]["rows"]
        bad = client.get(f"/projects/web/pools/{pool.pk}/?measure=ndgc_cut_10")
        assert bad.status_code == 400 and "did you mean" in bad.content.decode()
        assert 'id="simulation-table"' in bad.content.decode()  # the rest of the page stands
        api = client.get(f"/api/projects/web/pools/{pool.pk}/progress/?measure=ndgc_cut_10")
        assert api.status_code == 400 and "ndcg_cut_10" in api.json()["measure"][0]

    def test_it_says_which_measure_to_evaluate_with_when_none_is_stored(
        self, linked: dict[str, Any], theo: User
    ) -> None:
        pool = pool_of(linked, theo, budget=4)
        context = pool_planner_context(pool, measure="ndcg_cut_20")
        assert context["planner"] is None and "(with ndcg_cut_20)" in context["planner_reason"]


@pytest.mark.django_db
class TestPlanner:
    def test_it_plans_from_the_stored_per_topic_scores_as_the_topic_set_size_design_does(
        self, linked: dict[str, Any], theo: User
    ) -> None:
        pool = pool_of(linked, theo, budget=4)
        qids, names, matrix = topic_scores(pool, linked["source"])
        qrels = read_qrels(linked["source"])
        columns = []
        for data in read_runs(linked):
            result = evaluate(qrels, data, ["map"])
            got, values = result.per_query_array(result.specs[0].key)
            columns.append(dict(zip(got.tolist(), values.tolist(), strict=True)))
        reference = np.array([[column[q] for column in columns] for q in qids])
        assert qids == ["q0", "q1", "q2"] and names == ["good", "late"]
        np.testing.assert_allclose(matrix, reference)
        context = pool_planner_context(pool)
        table = topic_set_size_table(reference, n_systems=2).as_dict()
        assert context["planner"]["rows"] == table["rows"]
        assert context["planner"]["variance"] == pytest.approx(table["variance"])

    def test_the_page_shows_the_planner_the_simulation_with_its_numbers_and_links_the_leaderboard(
        self, linked: dict[str, Any], theo: User
    ) -> None:
        pool = pool_of(linked, theo, budget=6)
        client = signed_in(theo)
        page = client.get(f"/projects/web/pools/{pool.pk}/").content.decode()
        assert 'id="planner-table"' in page and 'id="simulation-table"' in page
        assert 'id="figure-simulation"' in page
        assert f'href="/teams/{linked["source"].team.slug}/leaderboard/{linked["source"].pk}/"' in page
        rows = list(
            csv.reader(
                io.StringIO(client.get(f"/projects/web/pools/{pool.pk}/simulation.csv").content.decode())
            )
        )
        assert rows[0] == ["strategy", "judged", "relevant_found", "kendall_tau", "measure"]
        assert {row[4] for row in rows[1:]} == {"map"}
        stored = [
            [curve["strategy"], str(step["judged"]), str(step["relevant_found"])]
            for curve in pool.simulation["strategies"]
            for step in curve["steps"]
        ]
        assert [row[:3] for row in rows[1:]] == stored
        for strategy, judged, found in stored[:3]:
            assert f'<td>{strategy}</td><td class="num">{judged}</td><td class="num">{found}</td>' in page

    def test_the_api_progress_has_the_simulation_and_the_planner(
        self, linked: dict[str, Any], theo: User
    ) -> None:
        pool = pool_of(linked, theo, budget=6)
        body = signed_in(theo).get(f"/api/projects/web/pools/{pool.pk}/progress/").json()
        assert body["simulation"]["strategies"] == pool.simulation["strategies"]
        assert body["planner"]["n_systems"] == 2 and body["planner_reason"] == ""
        detail = signed_in(theo).get(f"/api/projects/web/pools/{pool.pk}/").json()
        assert detail["simulation"]["qrels"] == linked["source"].pk

    def test_it_says_why_without_two_evaluated_runs(self, linked: dict[str, Any], theo: User) -> None:
        pool = pool_of(linked, theo, budget=4)
        linked["runs"][1].evaluations.all().delete()
        context = pool_planner_context(pool)
        assert context["planner"] is None and "at least two" in context["planner_reason"]


def expected_steps(linked: dict[str, Any], source: QrelsSource, simulation: dict[str, Any], strategy: str,
                   measure: str, budget: int = 12) -> list[dict[str, Any]]:  # fmt: skip
    """evalcore's `simulate_pooling` called directly on the run files, the runs ranked by `measure`."""
    steps = simulate_pooling(
        read_runs(linked), read_qrels(source), PoolParams(strategy, budget=budget, depth=10),
        step=simulation["step"], measure=measure, names=[run.name for run in linked["runs"]],
    )  # fmt: skip
    return [
        {"judged": s.judged, "relevant_found": s.relevant_found, "kendall_tau": s.kendall_tau} for s in steps
    ]


@pytest.mark.django_db
class TestSimulationMeasure:
    """The measure that ranks the runs in the pool's simulation: chosen per pool (page, API), stored with it,
    kept by a new version's refresh."""

    def test_the_simulation_by_another_measure_is_evalcores_by_that_measure(
        self, linked: dict[str, Any], theo: User
    ) -> None:
        pool = pool_of(linked, theo, budget=12, simulation_measure="ndcg_cut_10")
        assert pool.simulation_measure == "ndcg_cut_10" and pool.simulation["measure"] == "ndcg_cut_10"
        for curve in pool.simulation["strategies"]:
            assert curve["steps"] == expected_steps(
                linked, linked["source"], pool.simulation, curve["strategy"], "ndcg_cut_10"
            )

    def test_pool_runs_m_stores_what_simulate_pooling_m_prints_on_the_same_files(
        self, linked: dict[str, Any], tmp_path: Path
    ) -> None:
        """`pool_runs -m nDCG@10` ranks the simulation's runs by that measure, and each stored curve is what
        `simulate_pooling -m nDCG@10` prints on the same run files and qrels (the version, exported as
        TREC qrels), strategy, budget, depth, seed and step (five runs: tau is not only +-1)."""
        more = [
            uploads.run_upload(team=linked["project"].team, upload=upload(f"{tag}.run", run_text(order, tag)),
                               uploaded_by=linked["runs"][0].uploaded_by)
            for tag, order in (("mix", [3, 0, 4, 1, 5, 2]), ("deep", [3, 4, 5, 2, 1, 0]), ("alt", [1, 3, 0, 5, 2, 4]))
        ]  # fmt: skip
        names = [arg for run in [*linked["runs"], *more] for arg in ("--run", run.name)]
        out = io.StringIO()
        call_command("pool_runs", "--project", "web", *names, "--strategy", "mtf", "--budget", "12", "--depth", "10",
                     "--seed", "7", "-m", "nDCG@10", "--json", stdout=out)  # fmt: skip
        data = json.loads(out.getvalue())
        pool = JudgingPool.objects.get(pk=data["pool"])
        assert data["simulation_measure"] == pool.simulation_measure == "nDCG@10"
        assert pool.simulation["measure"] == "nDCG@10" and pool.simulation["qrels"] == linked["source"].pk
        qrels_file = tmp_path / "v1.qrels"
        with evaluations.qrels_path(linked["source"]) as path:
            shutil.copyfile(path, qrels_file)
        files = [arg for run in [*linked["runs"], *more] for arg in ("--run", run.file.path)]

        def simulated(strategy: str, *measure: str) -> dict[str, Any]:
            printed = io.StringIO()
            call_command("simulate_pooling", "--qrels", str(qrels_file), *files, "--strategy", strategy,
                         "--budget", "12", "--depth", "10", "--seed", "7", "--step", str(pool.simulation["step"]),
                         *measure, "--json", stdout=printed)  # fmt: skip
            return json.loads(printed.getvalue())  # type: ignore[no-any-return]

        assert [curve["strategy"] for curve in pool.simulation["strategies"]] == list(SIMULATED)
        for curve in pool.simulation["strategies"]:
            command = simulated(curve["strategy"], "-m", "nDCG@10")
            assert command["measure"] == "nDCG@10" and command["steps"] == curve["steps"], curve["strategy"]
            assert simulated(curve["strategy"])["steps"] != curve["steps"]  # by map: the measure matters here

    def test_a_lead_picks_the_measure_on_the_page_and_the_queued_task_computes_it(
        self, linked: dict[str, Any], theo: User, queued: QueuedTasks,
        django_capture_on_commit_callbacks: Any,
    ) -> None:  # fmt: skip
        pool = pool_of(linked, theo, budget=12)
        client = signed_in(theo)
        page = client.get(f"/projects/web/pools/{pool.pk}/").content.decode()
        assert 'id="simulation-measure-form"' in page and 'id="simulation-measure" value="map"' in page
        with django_capture_on_commit_callbacks(execute=True):
            answer = client.post(f"/projects/web/pools/{pool.pk}/simulation/", {"measure": " P.5 "})
        assert answer.status_code == 302
        assert ("monitoring.tasks.pool_simulate", (pool.pk,)) in [(n, a) for n, a, _ in queued.sent]
        pool.refresh_from_db()
        assert pool.simulation_measure == "P.5" and pool.simulation["measure"] == "map"  # not computed yet
        page = client.get(f"/projects/web/pools/{pool.pk}/").content.decode()
        assert 'id="simulation-pending"' in page and "Simulation by P.5 queued" in page
        assert planner.pool_simulate_task(pool_id=pool.pk) is True  # the worker's call
        pool.refresh_from_db()
        assert pool.simulation["measure"] == "P.5"
        for curve in pool.simulation["strategies"]:
            assert curve["steps"] == expected_steps(linked, linked["source"], pool.simulation, curve["strategy"],
                                                    "P_5")  # fmt: skip
        page = client.get(f"/projects/web/pools/{pool.pk}/").content.decode()
        assert 'id="simulation-pending"' not in page and "runs ranked by P.5" in page
        assert "τ (P.5)</th>" in page  # the table's
        figure = simulation_figure(pool.simulation)
        assert figure is not None
        axis = figure["layout"]["yaxis2"]["title"]["text"]  # the chart's
        assert axis == "Kendall's τ by P.5 vs the oracle (dotted)"
        rows = list(csv.reader(io.StringIO(
            client.get(f"/projects/web/pools/{pool.pk}/simulation.csv").content.decode())))  # fmt: skip
        assert rows[0][-1] == "measure" and {row[-1] for row in rows[1:]} == {"P.5"}

    def test_the_page_refuses_a_measure_it_cannot_rank_by_and_keeps_the_choice(
        self, linked: dict[str, Any], theo: User, queued: QueuedTasks
    ) -> None:
        pool = pool_of(linked, theo, budget=4)
        client = signed_in(theo)
        for measure in ("ndgc_cut_10", "relstring", "map P_5"):
            answer = client.post(
                f"/projects/web/pools/{pool.pk}/simulation/", {"measure": measure}, follow=True
            )
            assert answer.status_code == 200 and 'id="simulation-table"' in answer.content.decode()
        assert (
            "did you mean"
            in client.post(
                f"/projects/web/pools/{pool.pk}/simulation/", {"measure": "ndgc_cut_10"}, follow=True
            ).content.decode()
        )
        assert JudgingPool.objects.get(pk=pool.pk).simulation_measure == "map" and not queued.sent
        # A building pool: its build computes the simulation.
        JudgingPool.objects.filter(pk=pool.pk).update(stage=JudgingPool.Stage.BUILDING)
        answer = client.post(f"/projects/web/pools/{pool.pk}/simulation/", {"measure": "P_5"}, follow=True)
        assert "once it is built" in answer.content.decode() and not queued.sent

    def test_the_api_takes_the_measure_shows_it_and_says_when_the_queue_is_down(
        self, linked: dict[str, Any], theo: User, queued: QueuedTasks,
        django_capture_on_commit_callbacks: Any, monkeypatch: pytest.MonkeyPatch,
    ) -> None:  # fmt: skip
        pool = pool_of(linked, theo, budget=12)
        client = signed_in(theo)
        path = f"/api/projects/web/pools/{pool.pk}/simulation/"
        assert client.get(f"/api/projects/web/pools/{pool.pk}/").json()["simulation_measure"] == "map"
        with django_capture_on_commit_callbacks(execute=True):
            answer = client.post(path, {"measure": "ndcg_cut_10"}, content_type="application/json")
        assert answer.status_code == 202, answer.content
        assert answer.json()["simulation_measure"] == "ndcg_cut_10"
        assert answer.json()["simulation"]["measure"] == "map"
        progress = client.get(f"/api/projects/web/pools/{pool.pk}/progress/").json()
        assert progress["simulation_pending"] is True and progress["simulation_measure"] == "ndcg_cut_10"
        planner.pool_simulate_task(pool_id=pool.pk)
        progress = client.get(f"/api/projects/web/pools/{pool.pk}/progress/").json()
        assert progress["simulation_pending"] is False and progress["simulation"]["measure"] == "ndcg_cut_10"
        pool.refresh_from_db()
        assert progress["simulation"]["strategies"] == pool.simulation["strategies"]
        bad = client.post(path, {"measure": "ndgc_cut_10"}, content_type="application/json")
        assert bad.status_code == 400 and "ndcg_cut_10" in bad.json()["measure"][0]
        assert client.post(path, {"measure": "x" * 65}, content_type="application/json").status_code == 400
        # Outside a transaction (as a request is) the task is sent at once: a broker that is down answers 503.
        monkeypatch.setattr(planner, "_in_atomic_block", lambda: False)
        queued.broker_down = True
        down = client.post(path, {"measure": "P_5"}, content_type="application/json")
        assert down.status_code == 503 and down.json()["simulation_measure"] == "P_5"  # the choice stays
        page = client.post(f"/projects/web/pools/{pool.pk}/simulation/", {"measure": "P_5"}, follow=True)
        assert "The task queue is unreachable" in page.content.decode()
        queued.broker_down = False
        assert client.post(path, {}, content_type="application/json").json()["simulation_measure"] == "map"
        schema = client.get("/api/schema/?format=json").json()
        operation = schema["paths"]["/api/projects/{slug}/pools/{id}/simulation/"]["post"]
        assert {"202", "400", "403", "404", "503"} <= set(operation["responses"])
        assert "simulation_measure" in schema["components"]["schemas"]["PoolOut"]["properties"]

    def test_the_api_creates_a_pool_with_its_measure(
        self, linked: dict[str, Any], theo: User, queued: QueuedTasks
    ) -> None:
        client = signed_in(theo)
        body = {"runs": [run.pk for run in linked["runs"]], "strategy": "depth", "budget": 4, "depth": 10}
        bad = client.post("/api/projects/web/pools/", {**body, "simulation_measure": "relstring"},
                          content_type="application/json")  # fmt: skip
        assert bad.status_code == 400 and "simulation_measure" in bad.json()
        created = client.post("/api/projects/web/pools/", {**body, "simulation_measure": "P_5"},
                              content_type="application/json")  # fmt: skip
        assert created.status_code == 202, created.content
        assert created.json()["simulation_measure"] == "P_5"
        assert pooling.pool_build_run(pool_id=created.json()["id"]).status == "done"
        assert JudgingPool.objects.get(pk=created.json()["id"]).simulation["measure"] == "P_5"

    def test_a_new_version_keeps_the_pools_measure(
        self, linked: dict[str, Any], theo: User, carol: User
    ) -> None:
        pool = pool_of(linked, theo, budget=12, simulation_measure="P_5")
        v2 = build_version(linked["project"], carol, list(Task.objects.filter(project=linked["project"])))
        assert planner.pool_simulations_refresh(build_id=v2.pk) == [pool.pk]
        v2_source = QrelsSource.objects.get(build=v2)
        pool.refresh_from_db()
        assert pool.simulation["qrels"] == v2_source.pk and pool.simulation["measure"] == "P_5"
        for curve in pool.simulation["strategies"]:
            assert curve["steps"] == expected_steps(
                linked, v2_source, pool.simulation, curve["strategy"], "P_5"
            )
        assert planner.pool_simulations_refresh(build_id=v2.pk) == []  # re-delivered: nothing
        # A choice whose task was never sent: the next refresh computes it, though on the same version.
        JudgingPool.objects.filter(pk=pool.pk).update(simulation_measure="map")
        assert planner.pool_simulations_refresh(build_id=v2.pk) == [pool.pk]
        assert JudgingPool.objects.get(pk=pool.pk).simulation["measure"] == "map"

    def test_a_simulation_computed_while_the_measure_changed_is_not_stored(
        self, linked: dict[str, Any], theo: User, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        pool = pool_of(linked, theo, budget=4)
        compute = planner.simulation_compute

        def changed_meanwhile(pool: JudgingPool, progress: Any = None) -> dict[str, Any]:
            JudgingPool.objects.filter(pk=pool.pk).update(simulation_measure="P_5")
            return compute(pool, progress)

        monkeypatch.setattr(planner, "simulation_compute", changed_meanwhile)
        before = JudgingPool.objects.get(pk=pool.pk).simulation
        planner.pool_simulate(pool_id=pool.pk)  # computed by map, stored by nobody: P_5's task stores its own
        assert JudgingPool.objects.get(pk=pool.pk).simulation == before


def test_kendall_tau_by_a_measure_other_than_map_is_scipys_on_the_rankings_by_that_measure() -> None:
    """A small case computed by hand: P@2 of four runs over two topics on the judgments so far (unjudged
    documents non-relevant, the mean over the topics judged so far) and on the whole qrels, their Kendall's
    tau-b by scipy, against `simulate_pooling(measure="P_2")` at every judgment."""
    from scipy.stats import kendalltau

    from evalcore.pooling import candidates_from_runs, judging_sequence
    from evalcore.pooling.simulation import candidate_grades
    from evalcore.retrieval import Qrels, Run

    truth = {"t1": {"a": 1, "b": 1, "c": 0, "d": 1}, "t2": {"e": 1, "f": 0, "g": 1, "h": 0}}
    rankings = {
        "r1": {"t1": ["a", "b", "c"], "t2": ["e", "g", "f"]},
        "r2": {"t1": ["c", "a", "d"], "t2": ["f", "h", "e"]},
        "r3": {"t1": ["d", "c", "b"], "t2": ["g", "f", "h"]},
        "r4": {"t1": ["c", "d", "a"], "t2": ["h", "e", "f"]},
    }
    runs = [
        Run.from_dict({qid: {doc: float(10 - rank) for rank, doc in enumerate(docs)} for qid, docs in ranked.items()})
        for ranked in rankings.values()
    ]  # fmt: skip
    qrels = Qrels.from_dict(truth)
    params = PoolParams("depth", depth=3)

    def p_at_2(judged: dict[str, dict[str, int]]) -> list[float]:
        return [
            float(
                np.mean([sum(judged[qid].get(doc, 0) >= 1 for doc in ranked[qid][:2]) / 2 for qid in judged])
            )
            for ranked in rankings.values()
        ]

    steps = simulate_pooling(runs, qrels, params, step=1, measure="P_2", names=list(rankings))
    candidates = candidates_from_runs(runs, depth=3, names=list(rankings), qids=list(qrels.qids))
    grades = candidate_grades(candidates, qrels)
    sequence = judging_sequence(candidates, params, grades >= 1).tolist()
    assert [s.judged for s in steps] == list(range(1, len(sequence) + 1)) and len(sequence) == 8
    full = p_at_2(truth)
    taus = []
    for step in steps:
        judged: dict[str, dict[str, int]] = {}
        for index in sequence[: step.judged]:
            qid, doc = candidates.pair(index)
            judged.setdefault(qid, {})[doc] = truth[qid][doc]
        want = kendalltau(full, p_at_2(judged)).statistic  # tau-b, as evalcore's
        taus.append(step.kendall_tau)
        if np.isnan(want):
            assert step.kendall_tau is None
        else:
            assert step.kendall_tau == pytest.approx(want)
    assert steps[-1].kendall_tau == pytest.approx(1.0)
    # The measure matters: ranked by map, the agreement differs somewhere on the way.
    by_map = [s.kendall_tau for s in simulate_pooling(runs, qrels, params, step=1, names=list(rankings))]
    assert by_map != taus


@pytest.mark.django_db
class TestGapsBeforeThePool:
    def test_the_gaps_are_served_before_the_pools_pending_tasks_and_its_reordering_leaves_them(
        self, linked: dict[str, Any], theo: User, carol: User
    ) -> None:
        project = linked["project"]
        pool = pool_of(linked, theo, strategy="take-rrf", budget=16)  # past the pairs v1 judged
        project.refresh_from_db()
        assert project.has_priorities
        done = loop.run_gaps_judge(run=linked["runs"][1], qrels=linked["source"], depth=2)
        gaps = {(f"q{i}", f"d{i}-{j}") for i in range(3) for j in (5, 4)}
        tasks = Task.objects.filter(project=project).select_related("topic", "document")
        urgent = {(t.topic.qid, t.document.doc_id) for t in tasks if t.priority == pooling.URGENT_PRIORITY}
        assert urgent == gaps and done.prioritised == 6
        pool_pairs = {
            (t.topic.qid, t.document.doc_id) for t in tasks if t.priority is not None and t.priority >= 0
        }
        assert pool_pairs  # the pool still wants some pairs
        served = []
        for _ in range(6):
            claim = judging.task_claim(project=project, annotator=carol)
            assert claim.assignment is not None
            task = claim.assignment.task
            served.append((task.topic.qid, task.document.doc_id))
            judging.annotation_submit(
                project=project, annotator=carol, assignment_id=claim.assignment.pk, grade=1
            )
            if len(served) == 2:
                run_pending(pool)  # a re-ordering between answers keeps the gaps first
        assert set(served) == gaps
        run_pending(pool)
        assert not Task.objects.filter(
            project=project, priority=pooling.URGENT_PRIORITY, label_count=0
        ).exists()

    def test_without_priorities_the_gaps_get_none(self, linked: dict[str, Any]) -> None:
        done = loop.run_gaps_judge(run=linked["runs"][1], qrels=linked["source"], depth=2)
        assert done.prioritised == 0
        assert not Task.objects.filter(project=linked["project"], priority__isnull=False).exists()


@pytest.mark.django_db
class TestLinks:
    def test_the_leaderboard_links_the_reuse_page_and_the_diff_and_the_reuse_page_links_back(
        self, linked: dict[str, Any], theo: User
    ) -> None:
        source, client = linked["source"], signed_in(theo)
        team = source.team.slug
        board = client.get(f"/teams/{team}/leaderboard/{source.pk}/").content.decode()
        assert f'href="/teams/{team}/qrels/{source.pk}/reuse/"' in board
        assert f'href="/teams/{team}/leaderboard/{source.pk}/diff/"' in board
        reuse = client.get(f"/teams/{team}/qrels/{source.pk}/reuse/").content.decode()
        assert f'href="/teams/{team}/leaderboard/{source.pk}/" id="back-to-leaderboard"' in reuse


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_pool_page_draws_the_simulation_beside_its_numbers_and_the_planner(
    page: Any, live_server: Any, linked: dict[str, Any], theo: User
) -> None:
    """Headless Chromium: the simulated yield by strategy is drawn (plotly's SVG), its table and the
    planner's beside it."""
    pool = pool_of(linked, theo, budget=6)
    browser_log_in(page, live_server, THEO.username, THEO.password)
    page.goto(f"{live_server.url}/projects/web/pools/{pool.pk}/")
    page.wait_for_selector("#figure-simulation-chart .main-svg", timeout=30_000)
    assert page.locator("#figure-simulation-chart .legendtext").count() == len(SIMULATED)
    assert page.locator("#simulation-table tbody tr").count() == sum(
        len(curve["steps"]) for curve in pool.simulation["strategies"]
    )
    assert page.locator("#planner-table tbody tr").count() == 3
    page.locator("#pool-leaderboard-link").click()
    assert (
        page.url == f"{live_server.url}/teams/{linked['source'].team.slug}/leaderboard/{linked['source'].pk}/"
    )
