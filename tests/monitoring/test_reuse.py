"""The reuse slice (issue 23, points 4-6): the analysis jobs, the qrels source's reuse page and CSV, the
planner, and the three commands; results checked against evalcore.reuse on the same files."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from annotations.models import QrelsBuild, QrelsJudgment
from evalcore import trec
from evalcore.reuse import PairLabels, ReuseParams, SensitivityParams, annotator_sensitivity, leave_one_out
from evalplatform.jobs import JobStatus
from evalplatform.models import Team
from monitoring.files import uploads
from monitoring.models import QrelsSource, ReuseAnalysis, Run
from monitoring.reuse import services
from tests.annotations.conftest import build_project
from tests.monitoring.conftest import synthetic_collection, upload
from tests.monitoring.test_pages import stored_evaluation

QUALITIES = [
    ("bm25", 0.3, ["lexical"]),
    ("bm25-rm3", 0.5, ["lexical"]),
    ("dense", 0.9, ["neural"]),
    ("random", 0.0, []),
]


def add_runs(
    team: Team, theo: User, qrels: QrelsSource, texts: list[tuple[str, str, list[str]]]
) -> list[Run]:
    runs = []
    for name, text, tags in texts:
        run = uploads.run_upload(
            team=team, upload=upload(f"{name}.run", text), name=name, tags=tags, uploaded_by=theo
        )
        stored_evaluation(run, qrels, {"map": 0.1})
        runs.append(run)
    return runs


@pytest.fixture
def source(team: Team, theo: User) -> QrelsSource:
    qrels_text, make_run = synthetic_collection(queries=8, docs=30, seed=1)
    qrels = uploads.qrels_upload(
        team=team, upload=upload("judged.qrels", qrels_text), name="judged", uploaded_by=theo
    )
    add_runs(team, theo, qrels, [(name, make_run(i, q), tags) for i, (name, q, tags) in enumerate(QUALITIES)])
    return qrels


def run_now(analysis: ReuseAnalysis) -> ReuseAnalysis:
    services.reuse_analysis_run(analysis_id=analysis.pk)
    analysis.refresh_from_db()
    assert analysis.status == JobStatus.DONE, analysis.error
    return analysis


def expected_report(source: QrelsSource, params: ReuseParams) -> dict[str, Any]:
    runs = {
        r.name: trec.read_run(r.file.path)
        for r in Run.objects.filter(team=source.team).order_by("created_at", "pk")
    }
    tags = {r.name: r.tags for r in Run.objects.filter(team=source.team)}
    return leave_one_out(trec.read_qrels(source.file.path), runs, params=params, tags=tags).as_dict()


@pytest.mark.django_db
class TestReusabilityJob:
    def test_it_stores_the_leave_one_out_report_of_the_evaluated_runs(
        self, source: QrelsSource, theo: User, queued: Any
    ) -> None:
        analysis = services.reuse_analysis_create(
            qrels=source, kind="reusability", params={"depth": 5}, created_by=theo
        )
        run_now(analysis)
        expected = expected_report(source, ReuseParams(depth=5))
        stored = analysis.result
        assert [r["run"] for r in stored["runs"]] == [r["run"] for r in expected["runs"]]
        for got, want in zip(
            stored["runs"] + stored["groups"], expected["runs"] + expected["groups"], strict=True
        ):
            assert got["unique"] == want["unique"] and got["rank_left_out"] == want["rank_left_out"]
            assert got["left_out"]["map"] == pytest.approx(want["left_out"]["map"])
        assert {r["group"] for r in stored["groups"]} == {"lexical"}
        assert len(stored["topics"]["qids"]) == 8 and len(stored["topics"]["scores"][0]) == 4
        assert json.dumps(stored, allow_nan=False)

    def test_it_refuses_sensitivity_for_an_uploaded_file(self, source: QrelsSource, theo: User) -> None:
        with pytest.raises(Exception, match="built from a judging project"):
            services.reuse_analysis_create(qrels=source, kind="sensitivity", created_by=theo)

    def test_it_refuses_bad_parameters(self, source: QrelsSource, theo: User) -> None:
        with pytest.raises(Exception, match="depth"):
            services.reuse_analysis_create(
                qrels=source, kind="reusability", params={"depth": 0}, created_by=theo
            )

    def test_the_planner_comes_from_the_stored_per_topic_scores(
        self, source: QrelsSource, theo: User
    ) -> None:
        assert services.qrels_planner_context(qrels=source)["planner"] is None
        run_now(services.reuse_analysis_create(qrels=source, kind="reusability", created_by=theo))
        planner = services.qrels_planner_context(qrels=source)["planner"]
        assert [r["min_diff"] for r in planner["rows"]] == [0.02, 0.05, 0.1]
        assert planner["n_systems"] == 4 and planner["alpha"] == 0.05 and planner["power"] == 0.8
        assert planner["rows"][0]["ttest"] > planner["rows"][2]["ttest"]


def build_source(team: Team, theo: User, lena: User) -> QrelsSource:
    """A done build of a linked project: q0/q1 with three labels a pair; carol alone grades q0/d0-2 up."""
    project = build_project(lead=lena, topics=2, docs_per_topic=4, slug="judging")
    build = QrelsBuild.objects.create(
        project=project, version=1, status="done", content_hash="x" * 64, finished_at=timezone.now()
    )
    rows = []
    for q in range(2):
        for d in range(4):
            grade = 1 if d < 2 else 0
            labels = [{"annotator": n, "grade": grade} for n in ("ann", "bob")] + [
                {"annotator": "carol", "grade": 2 if (q, d) == (0, 2) else grade}
            ]
            rows.append(
                QrelsJudgment(
                    build=build,
                    qid=f"q{q}",
                    doc_id=f"d{q}-{d}",
                    rel=grade,
                    score=grade,
                    n_labels=3,
                    labels=labels,
                )
            )
    QrelsJudgment.objects.bulk_create(rows)
    source = QrelsSource.objects.create(team=team, name="judging v1", kind="build", build=build)
    a = "".join(f"q{q} Q0 d{q}-{d} {d} {10 - d} a\n" for q in range(2) for d in range(4))  # d0 first
    b = "".join(f"q{q} Q0 d{q}-{d} {r} {10 - r} b\n" for q in range(2) for r, d in enumerate([2, 0, 1, 3]))
    add_runs(team, theo, source, [("a", a, []), ("b", b, [])])
    return source


@pytest.mark.django_db
def test_it_analyses_annotator_sensitivity_of_a_build(team: Team, theo: User, lena: User) -> None:
    source = build_source(team, theo, lena)
    analysis = run_now(
        services.reuse_analysis_create(
            qrels=source, kind="sensitivity", params={"n_resamples": 60, "seed": 2}, created_by=theo
        )
    )
    result = analysis.result
    assert analysis.params["aggregation"] == "median"  # the build's
    pairs = PairLabels.from_judgments(
        list(
            QrelsJudgment.objects.filter(build=source.build)
            .order_by("qid", "doc_id")
            .values_list("qid", "doc_id", "rel", "labels")
        )
    )
    runs = {
        r.name: trec.read_run(r.file.path) for r in Run.objects.filter(team=team).order_by("created_at", "pk")
    }
    expected = annotator_sensitivity(pairs, runs, params=SensitivityParams(n_resamples=60, seed=2)).as_dict()
    assert result["swaps"] == expected["swaps"] and result["tau_mean"] == pytest.approx(expected["tau_mean"])
    carol = next(a for a in result["annotators"] if a["annotator"] == "carol")
    # b ranks d2, d0, d1: AP (1/2 + 2/3) / 2 = 7/12 on each query. Carol's grade makes q0/d0-2 relevant:
    # b's AP on q0 becomes 1, its MAP (1 + 7/12) / 2; a ranks d0, d1, d2 and keeps 1.
    assert result["published"] == pytest.approx([1.0, 7 / 12])
    assert carol["scores"] == pytest.approx([1.0, (1 + 7 / 12) / 2])


@pytest.mark.django_db
class TestPage:
    def test_it_shows_verdicts_tables_and_the_planner(
        self, client: Client, source: QrelsSource, theo: User
    ) -> None:
        run_now(
            services.reuse_analysis_create(
                qrels=source, kind="reusability", params={"depth": 5}, created_by=theo
            )
        )
        client.force_login(theo)
        page = client.get(f"/teams/{source.team.slug}/qrels/{source.pk}/reuse/")
        html = page.content.decode()
        assert page.status_code == 200
        assert 'id="reuse-table"' in html and 'id="group-table"' in html and 'id="planner-table"' in html
        assert html.count('<li data-level="') == 4 and "Judged@10" in html
        assert 'id="run-reusability"' in html
        assert "Annotator sensitivity" not in html  # an uploaded file has no annotators

    def test_a_viewer_reads_but_cannot_start(self, client: Client, source: QrelsSource, vera: User) -> None:
        client.force_login(vera)
        base = f"/teams/{source.team.slug}/qrels/{source.pk}/reuse/"
        page = client.get(base)
        assert page.status_code == 200 and 'id="run-reusability"' not in page.content.decode()
        assert client.post(base + "run/", {"kind": "reusability"}).status_code == 403

    def test_an_editor_queues_an_analysis(
        self,
        client: Client,
        source: QrelsSource,
        theo: User,
        queued: Any,
        django_capture_on_commit_callbacks: Any,
    ) -> None:
        client.force_login(theo)
        with django_capture_on_commit_callbacks(execute=True):
            answer = client.post(
                f"/teams/{source.team.slug}/qrels/{source.pk}/reuse/run/",
                {"kind": "reusability", "depth": "10"},
            )
        assert answer.status_code == 302
        analysis = ReuseAnalysis.objects.get(qrels=source)
        assert analysis.params["depth"] == 10 and queued.names() == ["monitoring.tasks.reuse_analysis_run"]

    def test_an_outsider_gets_404(self, client: Client, source: QrelsSource, otto: User) -> None:
        client.force_login(otto)
        assert client.get(f"/teams/{source.team.slug}/qrels/{source.pk}/reuse/").status_code == 404

    def test_the_csv_neutralises_and_lists_every_row(
        self, client: Client, source: QrelsSource, theo: User
    ) -> None:
        _, make_run = synthetic_collection(queries=8, docs=30, seed=1)
        add_runs(source.team, theo, source, [("=HYPERLINK(1)", make_run(9, 0.4), [])])
        client.force_login(theo)
        base = f"/teams/{source.team.slug}/qrels/{source.pk}/reuse/"
        before = client.get(base + "reusability.csv").content.decode().strip().splitlines()
        assert before == ["group,run,unique,unique_relevant,rank_full,rank_left_out"]  # nothing analysed yet
        run_now(services.reuse_analysis_create(qrels=source, kind="reusability", created_by=theo))
        lines = client.get(base + "reusability.csv").content.decode().strip().splitlines()
        assert lines[0].startswith("group,run,unique") and len(lines) == 1 + 5 + 2
        assert any(line.startswith(",'=HYPERLINK(1),") for line in lines)
        planner = client.get(base + "planner.csv").content.decode().strip().splitlines()
        assert len(planner) == 4 and planner[0].startswith("min_diff,alpha,power")
        assert client.get(base + "sensitivity.csv").content.decode().strip() == "run_a,run_b,swap_rate"
        assert client.get(base + "other.csv").status_code == 404


@pytest.mark.django_db
class TestCommands:
    def test_qrels_reusability_prints_json(self, source: QrelsSource) -> None:
        out = StringIO()
        call_command(
            "qrels_reusability",
            "--team",
            source.team.slug,
            "--qrels",
            str(source.pk),
            "--depth",
            "5",
            "--json",
            stdout=out,
        )
        data = json.loads(out.getvalue())
        assert data == json.loads(
            json.dumps({**expected_report(source, ReuseParams(depth=5)), "topics": data["topics"]})
        )

    def test_qrels_reusability_prints_a_table(self, source: QrelsSource) -> None:
        out = StringIO()
        call_command("qrels_reusability", "--team", source.team.slug, "--qrels", str(source.pk), stdout=out)
        assert "bm25: " in out.getvalue() and "Judged@10" in out.getvalue()

    def test_annotator_sensitivity_prints_json(self, team: Team, theo: User, lena: User) -> None:
        source = build_source(team, theo, lena)
        out = StringIO()
        call_command(
            "annotator_sensitivity",
            "--team",
            team.slug,
            "--qrels",
            str(source.pk),
            "--resamples",
            "30",
            "--json",
            stdout=out,
        )
        data = json.loads(out.getvalue())
        assert len(data["taus"]) == 30 and data["runs"] == ["a", "b"]

    def test_topic_set_size_reads_a_score_file(self, tmp_path: Path) -> None:
        scores = tmp_path / "scores.tsv"
        scores.write_text(
            "topic\tA\tB\tC\n"
            + "".join(
                f"t{i}\t{0.1 + 0.01 * (i % 5)}\t{0.2 + 0.02 * (i % 3)}\t{0.3 + 0.015 * (i % 4)}\n"
                for i in range(20)
            )
        )
        out = StringIO()
        call_command("topic_set_size", "--scores", str(scores), "--min-diff", "0.05", "--json", stdout=out)
        data = json.loads(out.getvalue())
        assert data["n_systems"] == 3 and data["pilot_topics"] == 20 and len(data["rows"]) == 1

    def test_topic_set_size_from_a_team_source(self, source: QrelsSource) -> None:
        out = StringIO()
        call_command("topic_set_size", "--team", source.team.slug, "--qrels", str(source.pk), stdout=out)
        assert "t-test" in out.getvalue() and "ANOVA over 4 systems" in out.getvalue()

    @pytest.mark.parametrize("name", ["qrels_reusability", "annotator_sensitivity", "topic_set_size"])
    def test_it_has_help(self, name: str) -> None:
        from django.core.management import load_command_class

        parser = load_command_class("monitoring", name).create_parser("manage.py", name)
        assert "--json" in parser.format_help() and "--team" in parser.format_help()


@pytest.mark.django_db
class TestApi:
    def test_it_returns_the_newest_analyses_and_the_planner(
        self, client: Client, source: QrelsSource, theo: User
    ) -> None:
        client.force_login(theo)
        url = f"/api/teams/{source.team.slug}/qrels/{source.pk}/reuse/"
        empty = client.get(url).json()
        assert empty["reusability"] is None and empty["planner"] is None and empty["planner_reason"]
        analysis = run_now(services.reuse_analysis_create(qrels=source, kind="reusability", created_by=theo))
        data = client.get(url).json()
        assert data["reusability"]["id"] == analysis.pk and data["reusability"]["state"]["status"] == "done"
        assert len(data["reusability"]["result"]["verdicts"]) == 4
        assert [row["min_diff"] for row in data["planner"]["rows"]] == [0.02, 0.05, 0.1]
        one = client.get(f"/api/teams/{source.team.slug}/reuse-analyses/{analysis.pk}/").json()
        assert one["result"]["runs"] == data["reusability"]["result"]["runs"]

    def test_an_editor_starts_one_and_a_viewer_cannot(
        self,
        client: Client,
        source: QrelsSource,
        theo: User,
        vera: User,
        queued: Any,
        django_capture_on_commit_callbacks: Any,
    ) -> None:
        url = f"/api/teams/{source.team.slug}/qrels/{source.pk}/reuse/"
        client.force_login(vera)
        assert client.post(url, {"kind": "reusability"}, content_type="application/json").status_code == 403
        client.force_login(theo)
        with django_capture_on_commit_callbacks(execute=True):
            answer = client.post(
                url, {"kind": "reusability", "params": {"depth": 20}}, content_type="application/json"
            )
        assert answer.status_code == 202 and answer.json()["params"]["depth"] == 20
        assert answer.json()["result"] is None and queued.names() == ["monitoring.tasks.reuse_analysis_run"]
        refused = client.post(url, {"kind": "sensitivity"}, content_type="application/json")
        assert refused.status_code == 400 and "judging project" in refused.json()["params"][0]
        bad = client.post(
            url, {"kind": "reusability", "params": {"measure": "nope"}}, content_type="application/json"
        )
        assert bad.status_code == 400


@pytest.mark.django_db
def test_topic_set_size_takes_sakais_approximations(tmp_path: Path) -> None:
    scores = tmp_path / "scores.txt"
    scores.write_text("".join(f"{0.1 + 0.03 * (i % 7)} {0.2 + 0.05 * (i % 3)}\n" for i in range(30)))
    answers = {}
    for method in ("exact", "sakai"):
        out = StringIO()
        call_command("topic_set_size", "--scores", str(scores), "--method", method, "--json", stdout=out)
        answers[method] = json.loads(out.getvalue())
    assert (
        answers["sakai"]["method"] == "sakai" and answers["exact"]["variance"] == answers["sakai"]["variance"]
    )
    for exact, sakai in zip(answers["exact"]["rows"], answers["sakai"]["rows"], strict=True):
        assert abs(exact["ttest"] - sakai["ttest"]) <= 1


@pytest.mark.django_db
def test_the_page_shows_a_builds_sensitivity_in_a_bounded_number_of_queries(
    client: Client, team: Team, theo: User, lena: User, django_assert_max_num_queries: Any
) -> None:
    source = build_source(team, theo, lena)
    run_now(
        services.reuse_analysis_create(qrels=source, kind="reusability", params={"depth": 2}, created_by=theo)
    )
    run_now(
        services.reuse_analysis_create(
            qrels=source, kind="sensitivity", params={"n_resamples": 40}, created_by=theo
        )
    )
    client.force_login(theo)
    with django_assert_max_num_queries(15):
        page = client.get(f"/teams/{team.slug}/qrels/{source.pk}/reuse/")
    html = page.content.decode()
    assert 'id="tau-summary"' in html and "40 resamples" in html
    assert 'id="swap-table"' in html and 'id="annotator-table"' in html and "carol" in html
    assert 'id="figure-tau"' in html and 'id="tau-table"' in html and 'id="run-sensitivity"' in html
    lines = (
        client.get(f"/teams/{team.slug}/qrels/{source.pk}/reuse/sensitivity.csv")
        .content.decode()
        .splitlines()
    )
    assert lines[0] == "run_a,run_b,swap_rate" and lines[1].startswith("a,b,")
