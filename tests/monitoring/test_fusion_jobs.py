"""Fusion from the web and the API: the job stores the file `manage.py fuse_runs` writes from the same
inputs as a new run of the team (with its provenance), evaluable like an upload; optimised weights and the
held-out score equal the command's; the form and the API refuse bad requests beside the field; the team's
roles hold; the list of fusions is read in a fixed number of queries."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from evalcore import trec
from evalcore.retrieval import evaluate
from evalplatform.errors import InputError
from evalplatform.models import Team
from monitoring.evaluations import services as evaluations
from monitoring.files import uploads
from monitoring.fusion import services as fusions
from monitoring.models import Evaluation, Fusion, Run
from tests.conftest import QueuedTasks
from tests.monitoring.conftest import synthetic_collection, upload

QRELS, RUN = synthetic_collection(queries=12, docs=20)


@pytest.fixture
def inputs(team: Team, theo: User) -> tuple[Any, Any, Any]:
    qrels = uploads.qrels_upload(team=team, upload=upload("judged.qrels", QRELS), uploaded_by=theo)
    bm25 = uploads.run_upload(team=team, upload=upload("bm25.run", RUN(1, 1.5, "bm25")), uploaded_by=theo)
    dense = uploads.run_upload(team=team, upload=upload("dense.run", RUN(2, 0.3, "dense")), uploaded_by=theo)
    return qrels, bm25, dense


def fused(**options: Any) -> Fusion:
    fusion = fusions.fusion_create(enqueue=False, **options)
    assert fusions.fusion_run(fusion_id=fusion.pk).status == "done", Fusion.objects.get(pk=fusion.pk).error
    return Fusion.objects.select_related("result").get(pk=fusion.pk)


def command_file(tmp_path: Path, runs: list[Run], *args: str) -> tuple[bytes, dict[str, Any]]:
    out = tmp_path / "fused.run"
    text = StringIO()
    paths = [arg for run in runs for arg in ("--run", run.file.path)]
    call_command("fuse_runs", *paths, *args, "--out", str(out), "--json", stdout=text)
    return out.read_bytes(), json.loads(text.getvalue())


@pytest.mark.django_db
class TestFusionJob:
    @pytest.mark.parametrize(
        ("options", "args"),
        [
            ({"method": "CombMNZ", "norm": "zmuv", "depth": 15}, ["--method", "CombMNZ", "--norm", "zmuv", "--depth", "15"]),
            ({"method": "wsum", "weights": [0.3, 0.7]}, ["--method", "wsum", "--weights", "0.3,0.7"]),
            ({"method": "rrf", "k": 20, "norm": None}, ["--method", "rrf", "--param", "k=20", "--norm", "none"]),
            ({"method": "gmnz", "gamma": 2.5}, ["--method", "gmnz", "--param", "gamma=2.5"]),
            ({"method": "logn_isr", "sigma": 0.3}, ["--method", "logn_isr", "--param", "sigma=0.3"]),
            ({"method": "rbc", "phi": 0.5}, ["--method", "rbc", "--param", "phi=0.5"]),
        ],
    )  # fmt: skip
    def test_it_stores_the_file_fuse_runs_writes_as_a_run_of_the_team(
        self, team: Team, theo: User, inputs: Any, tmp_path: Path, options: dict[str, Any], args: list[str]
    ) -> None:
        _, bm25, dense = inputs
        fusion = fused(team=team, runs=[bm25, dense], created_by=theo, **options)
        want, summary = command_file(tmp_path, [bm25, dense], *args)
        run = fusion.result
        assert run is not None and run.team_id == team.pk
        assert Path(run.file.path).read_bytes() == want
        assert (
            (run.num_rows, run.num_queries) == (summary["lines"], summary["queries"]) == (fusion.num_rows, 12)
        )
        assert run.tags == sorted(["fused", fusion.method]) and run.run_tag == f"fused-{fusion.method}"
        assert (
            run.description.startswith(f"Fusion #{fusion.pk}: {fusion.method}")
            and "bm25, dense" in run.description
        )
        option = fusions.METHOD_OPTION.get(fusion.method)
        if option is not None:  # the method's option, as given
            assert f"; {option}={options[option]:g}." in run.description

    def test_it_optimises_the_weights_as_fuse_runs_does_and_keeps_the_held_out_score(
        self, team: Team, inputs: Any, tmp_path: Path
    ) -> None:
        qrels, bm25, dense = inputs
        fusion = fused(
            team=team, runs=[bm25, dense], method="wsum", qrels=qrels, measure="map", folds=3, step=0.25
        )
        args = [
            "--method",
            "wsum",
            "--optimize",
            "--qrels",
            qrels.file.path,
            "-m",
            "map",
            "--folds",
            "3",
            "--step",
            "0.25",
        ]
        want, summary = command_file(tmp_path, [bm25, dense], *args)
        assert fusion.result is not None and Path(fusion.result.file.path).read_bytes() == want
        assert fusion.optimization == summary["optimization"]
        assert fusion.weights == summary["weights"] and fusion.optimization["mean_test_score"] is not None
        assert f"held-out map {fusion.optimization['mean_test_score']:.4f}" in fusion.result.description

    def test_the_fused_run_is_evaluated_like_an_upload(self, team: Team, inputs: Any) -> None:
        qrels, bm25, dense = inputs
        fusion = fused(team=team, runs=[bm25, dense], method="rrf")
        assert fusion.result is not None
        evaluation = evaluations.evaluation_create(
            run=fusion.result, qrels=qrels, measures=["map"], enqueue=False
        )
        assert evaluations.evaluation_run(evaluation_id=evaluation.pk).status == "done"
        want = evaluate(trec.read_qrels(qrels.file.path), trec.read_run(fusion.result.file.path), ["map"])
        assert Evaluation.objects.get(pk=evaluation.pk).per_query["map"] == pytest.approx(
            want.per_query_array("map")[1].tolist()
        )

    def test_it_runs_once_however_often_the_task_is_delivered(self, team: Team, inputs: Any) -> None:
        _, bm25, dense = inputs
        fusion = fused(team=team, runs=[bm25, dense], method="sum")
        assert fusions.fusion_run(fusion_id=fusion.pk).status == "finished"
        assert Run.objects.filter(team=team).count() == 3

    def test_it_is_queued_on_the_heavy_queue_after_commit(
        self, team: Team, inputs: Any, queued: QueuedTasks, django_capture_on_commit_callbacks: Any
    ) -> None:
        from evalplatform.celery import app

        _, bm25, dense = inputs
        with django_capture_on_commit_callbacks(execute=True):
            fusion = fusions.fusion_create(team=team, runs=[bm25, dense], method="sum")
        assert queued.sent == [
            ("monitoring.tasks.fusion_run", (fusion.pk,), {"countdown": 0, "retry": False})
        ]
        assert app.amqp.router.route({}, "monitoring.tasks.fusion_run")["queue"].name == "heavy"

    def test_it_fails_saying_which_input_was_deleted(self, team: Team, inputs: Any) -> None:
        _, bm25, dense = inputs
        fusion = fusions.fusion_create(team=team, runs=[bm25, dense], method="sum", enqueue=False)
        dense.delete()
        assert fusions.fusion_run(fusion_id=fusion.pk).status == "failed"
        assert (
            Fusion.objects.get(pk=fusion.pk).error
            == "Input runs deleted since the fusion was asked for: dense."
        )

    @pytest.mark.parametrize(
        ("options", "message"),
        [
            ({"method": "wsum", "weights": [1.0]}, "one weight per run: 1 weights for 2 runs"),
            ({"method": "sum", "weights": [1.0, 2.0]}, "Only wsum, wmnz take weights"),
            ({"method": "nope"}, "unknown fusion method 'nope'"),
            ({"method": "rrf", "norm": "borda"}, "without the borda normalisation"),
            ({"method": "sum", "optimize": True}, "Only wsum, wmnz, rrf can be optimised"),
            ({"method": "wsum", "optimize": True, "step": 0.3}, "must divide 1"),
            ({"method": "wsum", "optimize": True, "measure": "gm_map"}, "arithmetic-mean measure"),
            ({"method": "logn_isr", "sigma": 1.5}, r"sigma must be in \[0, 1\]"),
            ({"method": "rbc", "phi": 1.0}, r"phi must be in \(0, 1\)"),
        ],
    )
    def test_it_refuses_a_bad_request(
        self, team: Team, inputs: Any, options: dict[str, Any], message: str
    ) -> None:
        qrels, bm25, dense = inputs
        if options.pop("optimize", False):
            options["qrels"] = qrels
        with pytest.raises(InputError, match=message):
            fusions.fusion_create(team=team, runs=[bm25, dense], enqueue=False, **options)
        assert not Fusion.objects.exists()

    def test_it_refuses_another_teams_run(self, team: Team, other_team: Team, inputs: Any) -> None:
        _, bm25, _ = inputs
        theirs = uploads.run_upload(team=other_team, upload=upload("x.run", RUN(3, 1.0, "x")))
        with pytest.raises(InputError, match="must belong to the team"):
            fusions.fusion_create(team=team, runs=[bm25, theirs], method="sum", enqueue=False)


@pytest.fixture
def editor(client: Client, theo: User, team: Team) -> Client:
    client.force_login(theo)
    return client


@pytest.mark.django_db
class TestFusionPages:
    def form_data(self, inputs: Any, **changes: Any) -> dict[str, Any]:
        _, bm25, dense = inputs
        data = {"runs": [bm25.pk, dense.pk], "method": "wsum", "norm": "min-max", "weights": "", "k": 60,
                "gamma": 1, "sigma": 0.01, "phi": 0.8, "qrels": "", "measure": "map", "folds": 5, "step": 0.1,
                "seed": 0, "name": "", "depth": 1000}  # fmt: skip
        return {**data, **changes}

    @pytest.mark.parametrize(
        ("changes", "field", "message"),
        [
            ({"weights": "1"}, "weights", "Give one weight per run: 1 weights for 2 runs."),
            ({"weights": "a, b"}, "weights", "Give numbers separated by commas, such as 0.3, 0.7."),
            ({"method": "sum", "qrels": "QRELS"}, "qrels", "Only wsum, wmnz, rrf can be optimised, not sum."),
            (
                {"qrels": "QRELS", "step": 0.3},
                "step",
                "The weight step must divide 1 (0.1, 0.25, ...), not 0.3.",
            ),
            ({"runs": ["BM25"]}, "runs", "Choose at least two runs to fuse."),
            ({"method": "rbc", "phi": 1.5}, "phi", "phi must be in (0, 1)"),
            ({"method": "logn_isr", "sigma": 2}, "sigma", "Ensure this value is less than or equal to 1."),
        ],
    )
    def test_the_form_says_what_is_wrong_beside_the_field(
        self, editor: Client, inputs: Any, changes: dict[str, Any], field: str, message: str
    ) -> None:
        qrels, bm25, _ = inputs
        swap = {"QRELS": qrels.pk, "BM25": bm25.pk}
        changes = {key: [swap.get(v, v) for v in value] if isinstance(value, list) else swap.get(value, value)
                   for key, value in changes.items()}  # fmt: skip
        response = editor.post(
            reverse("monitoring:fusion-create", args=["search"]), self.form_data(inputs, **changes)
        )
        assert response.status_code == 400
        assert response.context["form"].errors == {field: [message]}
        assert not Fusion.objects.exists()

    def test_an_editor_starts_a_fusion_and_reads_its_provenance(
        self, editor: Client, inputs: Any, queued: QueuedTasks, django_capture_on_commit_callbacks: Any
    ) -> None:
        qrels, bm25, dense = inputs
        with django_capture_on_commit_callbacks(execute=True):
            response = editor.post(
                reverse("monitoring:fusion-create", args=["search"]),
                self.form_data(inputs, qrels=qrels.pk, folds=3, step=0.25, name="hybrid"),
            )
        fusion = Fusion.objects.get()
        assert response.status_code == 302 and response["Location"] == fusion.get_absolute_url()
        assert queued.names() == ["monitoring.tasks.fusion_run"]
        assert fusions.fusion_run(fusion_id=fusion.pk).status == "done"
        fusion.refresh_from_db()
        page = editor.get(fusion.get_absolute_url()).content.decode()
        assert f"{fusion.optimization['mean_test_score']:.4f}" in page and 'id="fusion-folds"' in page
        assert fusion.result is not None and fusion.result.name == "hybrid"
        run_page = editor.get(
            reverse("monitoring:run-detail", args=["search", fusion.result_id])
        ).content.decode()
        assert reverse("monitoring:fusion-detail", args=["search", fusion.pk]) in run_page

    def test_the_page_shows_the_methods_option(
        self, editor: Client, inputs: Any, team: Team, django_capture_on_commit_callbacks: Any
    ) -> None:
        with django_capture_on_commit_callbacks(execute=False):
            response = editor.post(
                reverse("monitoring:fusion-create", args=["search"]),
                self.form_data(inputs, method="rbc", phi=0.65),
            )
        fusion = Fusion.objects.get()
        assert response.status_code == 302 and (fusion.method, fusion.phi) == ("rbc", 0.65)
        assert fusions.fusion_run(fusion_id=fusion.pk).status == "done"
        page = editor.get(fusion.get_absolute_url()).content.decode()
        assert "<p>phi = 0.65</p>" in page

    def test_a_viewer_reads_but_cannot_fuse(
        self, client: Client, vera: User, team: Team, inputs: Any
    ) -> None:
        _, bm25, dense = inputs
        fusion = fused(team=team, runs=[bm25, dense], method="sum")
        client.force_login(vera)
        assert client.get(reverse("monitoring:fusion-create", args=["search"])).status_code == 403
        assert client.get(fusion.get_absolute_url()).status_code == 200


@pytest.mark.django_db
class TestFusionApi:
    def test_it_starts_a_fusion_with_ranx_aliases(
        self, editor: Client, inputs: Any, queued: QueuedTasks, django_capture_on_commit_callbacks: Any
    ) -> None:
        _, bm25, dense = inputs
        body = {"runs": [dense.pk, bm25.pk], "method": "weighted_sum", "norm": "none", "weights": [0.2, 0.8]}
        with django_capture_on_commit_callbacks(execute=True):
            response = editor.post("/api/teams/search/fusions/", body, content_type="application/json")
        assert response.status_code == 202, response.content
        data = response.json()
        assert (data["method"], data["norm"], data["weights"], data["status"]) == (
            "wsum",
            None,
            [0.2, 0.8],
            "pending",
        )
        assert [item["id"] for item in data["inputs"]] == [dense.pk, bm25.pk]
        assert queued.sent == [
            ("monitoring.tasks.fusion_run", (data["id"],), {"countdown": 0, "retry": False})
        ]
        assert fusions.fusion_run(fusion_id=data["id"]).status == "done"
        done = editor.get(data["url"]).json()
        assert done["status"] == "done" and done["result"]["name"] == "fused-wsum"
        assert editor.get(done["result_url"]).json()["id"] == done["result"]["id"]

    def test_it_takes_the_methods_options(
        self, editor: Client, inputs: Any, django_capture_on_commit_callbacks: Any
    ) -> None:
        _, bm25, dense = inputs
        body = {"runs": [bm25.pk, dense.pk], "method": "CombGMNZ", "gamma": 2}
        with django_capture_on_commit_callbacks(execute=False):
            response = editor.post("/api/teams/search/fusions/", body, content_type="application/json")
        assert response.status_code == 202, response.content
        data = response.json()
        assert (data["method"], data["gamma"], data["sigma"], data["phi"], data["k"]) == (
            "gmnz",
            2,
            0.01,
            0.8,
            60,
        )
        assert Fusion.objects.get().params().gamma == 2

    @pytest.mark.parametrize(
        ("body", "field"),
        [
            ({"method": "wsum", "weights": [1]}, "weights"),
            ({"method": "CombFOO"}, "method"),
            ({"method": "wsum", "optimize_on": "QRELS", "step": 0.3}, "step"),
            ({"method": "wsum", "optimize_on": 99999}, "optimize_on"),
            ({"method": "sum", "runs": ["BM25"]}, "runs"),
            ({"method": "rbc", "phi": 0}, "phi"),
            ({"method": "logn_isr", "sigma": -0.1}, "sigma"),
        ],
    )
    def test_it_names_the_field_of_a_bad_request(
        self, editor: Client, inputs: Any, body: dict[str, Any], field: str
    ) -> None:
        qrels, bm25, dense = inputs
        swap = {"QRELS": qrels.pk, "BM25": bm25.pk}
        body = {"runs": [bm25.pk, dense.pk], **body}
        body = {key: [swap.get(v, v) for v in value] if isinstance(value, list) else swap.get(value, value)
                for key, value in body.items()}  # fmt: skip
        response = editor.post("/api/teams/search/fusions/", body, content_type="application/json")
        assert response.status_code == 400 and list(response.json()) == [field], response.json()

    def test_a_viewer_may_not_start_one(self, client: Client, vera: User, inputs: Any) -> None:
        _, bm25, dense = inputs
        client.force_login(vera)
        body = {"runs": [bm25.pk, dense.pk], "method": "sum"}
        assert (
            client.post("/api/teams/search/fusions/", body, content_type="application/json").status_code
            == 403
        )
        assert client.get("/api/teams/search/fusions/").status_code == 200

    def test_it_lists_fusions_in_a_fixed_number_of_queries(
        self, editor: Client, team: Team, inputs: Any, django_assert_max_num_queries: Any
    ) -> None:
        qrels, bm25, dense = inputs
        fused(team=team, runs=[bm25, dense], method="sum")
        with django_assert_max_num_queries(8) as few:
            assert len(editor.get("/api/teams/search/fusions/").json()["results"]) == 1
        for _ in range(3):
            fusions.fusion_create(team=team, runs=[bm25, dense], method="wsum", qrels=qrels, enqueue=False)
        with django_assert_max_num_queries(len(few.captured_queries)):
            assert len(editor.get("/api/teams/search/fusions/").json()["results"]) == 4
