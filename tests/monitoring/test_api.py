"""The evaluation API's teams, runs, qrels and metric registry: uploads, reads, downloads, permissions,
pagination with query-count ceilings, token auth, and a clean OpenAPI schema."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from rest_framework.authtoken.models import Token

from annotations import qrels as qrels_builds
from annotations.models import Project, Task
from annotations.quality import services as quality
from evalcore.metrics import metric_registry
from evalplatform.models import Team
from evalplatform.teams import team_create, team_member_set
from monitoring.evaluations import services as evaluations
from monitoring.files import uploads
from monitoring.models import Evaluation, QrelsSource, Run
from tests.annotations.conftest import build_project, record_answers
from tests.conftest import Persona, make_user
from tests.monitoring.conftest import synthetic_collection, upload

QRELS, RUN = synthetic_collection()


def signed_in(client: Client, user: User) -> Client:
    client.force_login(user)
    return client


@pytest.fixture
def editor(client: Client, theo: User, team: Team) -> Client:
    return signed_in(client, theo)


@pytest.fixture
def viewer(client: Client, vera: User, team: Team) -> Client:
    return signed_in(client, vera)


@pytest.fixture
def outsider(client: Client, otto: User, team: Team, other_team: Team) -> Client:
    return signed_in(client, otto)


def many_runs(team: Team, count: int) -> None:
    Run.objects.bulk_create(
        [Run(team=team, name=f"run {i}", file=f"runs/{team.slug}/r{i}.run", tags=["x"]) for i in range(count)]
    )


@pytest.mark.django_db
class TestTeams:
    def test_it_lists_my_teams_with_my_role(self, client: Client, theo: User, vera: User, team: Team) -> None:
        team_list = signed_in(client, theo).get("/api/teams/").json()
        assert team_list["count"] == 1
        assert team_list["results"][0] | {"url": None} == {
            "slug": "search", "name": "Search", "description": "", "role": "editor", "url": None,
        }  # fmt: skip
        assert signed_in(client, vera).get("/api/teams/").json()["results"][0]["role"] == "viewer"

    def test_it_shows_a_superuser_every_team_as_an_editor(
        self, client: Client, team: Team, other_team: Team
    ) -> None:
        admin = User.objects.create_superuser("root", "root@example.org", "root-password-123")
        body = signed_in(client, admin).get("/api/teams/").json()
        assert [(row["slug"], row["role"]) for row in body["results"]] == [
            ("fraud", "editor"),
            ("search", "editor"),
        ]

    def test_it_lists_teams_in_a_fixed_number_of_queries(
        self, client: Client, theo: User, team: Team, django_assert_max_num_queries: Any
    ) -> None:
        signed_in(client, theo)
        with django_assert_max_num_queries(4) as few:
            assert client.get("/api/teams/").json()["count"] == 1
        for i in range(30):
            team_member_set(team=team_create(slug=f"team-{i}", name=f"Team {i:02}"), user=theo, role="viewer")
        with django_assert_max_num_queries(len(few.captured_queries)):
            body = client.get("/api/teams/").json()
        assert body["count"] == 31 and [row["role"] for row in body["results"][:2]] == ["editor", "viewer"]

    def test_it_describes_a_team_with_its_linked_projects_and_their_builds(
        self, editor: Client, team: Team, lena: User
    ) -> None:
        project = build_project(lead=lena, slug="web")
        project.team = team
        project.save(update_fields=["team"])
        build = qrels_builds.qrels_build_create(project=project, created_by=None, enqueue=False)
        qrels_builds.qrels_build_run(build_id=build.pk)
        uploads.run_upload(team=team, upload=upload("bm25.run", RUN(1, 1.0)))
        body = editor.get("/api/teams/search/").json()
        assert body["role"] == "editor" and (body["runs"], body["qrels"], body["evaluations"]) == (1, 0, 0)
        assert body["judging_projects"] == [{"slug": "web", "name": "Web", "builds": [1]}]

    def test_it_hides_a_team_and_all_it_holds_from_non_members(self, outsider: Client, team: Team) -> None:
        run = uploads.run_upload(team=team, upload=upload("bm25.run", RUN(1, 1.0)))
        for path in (
            "", "runs/", f"runs/{run.pk}/", f"runs/{run.pk}/download/", "qrels/", "evaluations/",
            "comparisons/", "leaderboard/1/",
        ):  # fmt: skip
            response = outsider.get(f"/api/teams/search/{path}")
            assert response.status_code == 404, path
            assert response.json() == {"detail": "No such team."}
        assert outsider.delete(f"/api/teams/search/runs/{run.pk}/").status_code == 404
        assert (
            outsider.post("/api/teams/search/runs/", {"file": upload("x.run", RUN(2, 1.0))}).status_code
            == 404
        )
        assert [row["slug"] for row in outsider.get("/api/teams/").json()["results"]] == ["fraud"]

    def test_it_refuses_anonymous_requests(self, client: Client, team: Team) -> None:
        assert client.get("/api/teams/").status_code in {401, 403}
        assert client.get("/api/teams/search/runs/").status_code in {401, 403}
        assert client.get("/api/metrics/").status_code in {401, 403}


@pytest.mark.django_db
class TestRuns:
    def test_it_uploads_a_run_with_its_tags(self, editor: Client) -> None:
        response = editor.post(
            "/api/teams/search/runs/",
            {"file": upload("bm25.run", RUN(1, 1.0, "bm25")), "description": "BM25 baseline",
             "tags": ["baseline, bm25", "v1"]},
        )  # fmt: skip
        assert response.status_code == 201, response.json()
        body = response.json()
        assert (body["name"], body["run_tag"], body["format"], body["tags"]) == (
            "bm25", "bm25", "trec", ["baseline", "bm25", "v1"],
        )  # fmt: skip
        assert (body["num_queries"], body["num_rows"], body["uploaded_by"]) == (20, 600, "theo")
        assert body["url"] == f"http://testserver/api/teams/search/runs/{body['id']}/"
        assert body["download_url"].endswith(f"/runs/{body['id']}/download/")
        assert Run.objects.get(pk=body["id"]).description == "BM25 baseline"

    def test_it_takes_one_comma_separated_tags_field_and_a_name(self, editor: Client) -> None:
        response = editor.post(
            "/api/teams/search/runs/",
            {
                "file": upload("dense.run", RUN(2, 1.0)),
                "name": "Dense v2",
                "tags": "dense,v2",
                "format": "trec",
            },
        )
        assert response.status_code == 201
        assert (response.json()["name"], response.json()["tags"]) == ("Dense v2", ["dense", "v2"])

    def test_it_accepts_a_token(self, client: Client, theo: User, team: Team) -> None:
        token = Token.objects.create(user=theo)
        auth = {"HTTP_AUTHORIZATION": f"Token {token.key}"}
        created = client.post("/api/teams/search/runs/", {"file": upload("bm25.run", RUN(1, 1.0))}, **auth)
        assert created.status_code == 201
        listed = client.get("/api/teams/search/runs/", **auth).json()
        assert [row["id"] for row in listed["results"]] == [created.json()["id"]]
        forged = client.get("/api/teams/search/runs/", HTTP_AUTHORIZATION="Token nope")
        assert forged.status_code in {401, 403} and forged.json() == {"detail": "Invalid token."}

    def test_it_refuses_a_malformed_run_naming_the_file_and_line_and_stores_nothing(
        self, editor: Client
    ) -> None:
        text = "q1 Q0 d1 1 2.0 bm25\nq1 Q0 d2 2 high bm25\n"
        response = editor.post("/api/teams/search/runs/", {"file": upload("bm25.run", text)})
        assert response.status_code == 400
        assert list(response.json()) == ["file"]
        assert (
            response.json()["file"][0].startswith("bm25.run:2: ") and "number" in response.json()["file"][0]
        )
        assert not Run.objects.exists()

    def test_it_refuses_an_empty_file_a_missing_file_and_an_unknown_format(self, editor: Client) -> None:
        empty = editor.post("/api/teams/search/runs/", {"file": upload("empty.run", "")})
        assert empty.status_code == 400 and empty.json() == {"file": ["empty.run: the file is empty"]}
        missing = editor.post("/api/teams/search/runs/", {"name": "no file"})
        assert missing.status_code == 400 and list(missing.json()) == ["file"]
        odd = editor.post("/api/teams/search/runs/", {"file": upload("a.run", RUN(1, 1.0)), "format": "csv"})
        assert odd.status_code == 400 and list(odd.json()) == ["format"]
        assert not Run.objects.exists()

    def test_it_lets_a_viewer_read_but_not_upload_or_delete(self, viewer: Client, team: Team) -> None:
        run = uploads.run_upload(team=team, upload=upload("bm25.run", RUN(1, 1.0)))
        assert viewer.get("/api/teams/search/runs/").json()["count"] == 1
        assert viewer.get(f"/api/teams/search/runs/{run.pk}/").status_code == 200
        refused = viewer.post("/api/teams/search/runs/", {"file": upload("x.run", RUN(2, 1.0))})
        assert refused.status_code == 403
        assert refused.json() == {"detail": "Only the team's editors can upload and start jobs."}
        assert viewer.delete(f"/api/teams/search/runs/{run.pk}/").status_code == 403
        assert Run.objects.count() == 1

    def test_it_serves_a_run_and_its_file(self, editor: Client, team: Team) -> None:
        run = uploads.run_upload(team=team, upload=upload("bm25.run", RUN(1, 1.0, "bm25")), tags=["a"])
        body = editor.get(f"/api/teams/search/runs/{run.pk}/").json()
        assert (body["id"], body["name"], body["tags"], body["sha256"]) == (run.pk, "bm25", ["a"], run.sha256)
        download = editor.get(f"/api/teams/search/runs/{run.pk}/download/")
        assert download.status_code == 200
        assert b"".join(download.streaming_content).decode() == RUN(1, 1.0, "bm25")
        assert 'filename="bm25.run"' in download["Content-Disposition"]

    def test_it_deletes_a_run_with_its_evaluations_comparisons_and_file(
        self, editor: Client, team: Team, django_capture_on_commit_callbacks: Any
    ) -> None:
        qrels = uploads.qrels_upload(team=team, upload=upload("judged.qrels", QRELS))
        run = uploads.run_upload(team=team, upload=upload("bm25.run", RUN(1, 1.0)))
        other = uploads.run_upload(team=team, upload=upload("dense.run", RUN(2, 1.0)))
        evaluations.evaluation_create(run=run, qrels=qrels, enqueue=False)
        evaluations.comparison_create(qrels=qrels, runs=[run, other], enqueue=False)
        stored = Path(run.file.path)
        with django_capture_on_commit_callbacks(execute=True):
            assert editor.delete(f"/api/teams/search/runs/{run.pk}/").status_code == 204
        assert not stored.exists() and Path(other.file.path).exists()
        assert list(Run.objects.values_list("pk", flat=True)) == [other.pk]
        assert not Evaluation.objects.exists() and not team.comparisons.exists()
        assert editor.get(f"/api/teams/search/runs/{run.pk}/").status_code == 404

    def test_it_finds_no_run_of_another_team(self, editor: Client, other_team: Team) -> None:
        foreign = uploads.run_upload(team=other_team, upload=upload("f.run", RUN(3, 1.0)))
        assert editor.get(f"/api/teams/search/runs/{foreign.pk}/").json() == {"detail": "No such run."}
        assert editor.get(f"/api/teams/search/runs/{foreign.pk}/download/").status_code == 404
        assert editor.delete(f"/api/teams/search/runs/{foreign.pk}/").status_code == 404
        assert editor.get(f"/api/teams/fraud/runs/{foreign.pk}/").status_code == 404

    def test_it_pages_runs_newest_first(self, editor: Client, team: Team) -> None:
        many_runs(team, 25)
        first = editor.get("/api/teams/search/runs/?page_size=10").json()
        assert first["count"] == 25 and len(first["results"]) == 10 and first["previous"] is None
        assert first["results"][0]["name"] == "run 24"
        last = editor.get(first["next"].replace("http://testserver", "")).json()
        last = editor.get(last["next"].replace("http://testserver", "")).json()
        assert len(last["results"]) == 5 and last["next"] is None
        assert editor.get("/api/teams/search/runs/?page=9").status_code == 404

    def test_it_lists_runs_in_a_fixed_number_of_queries(
        self, editor: Client, team: Team, django_assert_max_num_queries: Any
    ) -> None:
        many_runs(team, 3)
        with django_assert_max_num_queries(6) as few:
            assert len(editor.get("/api/teams/search/runs/").json()["results"]) == 3
        many_runs(team, 60)
        with django_assert_max_num_queries(len(few.captured_queries)):
            assert len(editor.get("/api/teams/search/runs/").json()["results"]) == 63


@pytest.fixture
def linked_project(team: Team, lena: User) -> Project:
    """A judging project of the search team with two annotators' labels and a finished build v1."""
    people = [make_user(Persona(f"ann{i}", f"ann{i}-password-123", "annotator")) for i in range(2)]
    project = build_project(lead=lena, annotators=people, slug="web", topics=2, docs_per_topic=3)
    project.team = team
    project.save(update_fields=["team"])
    tasks = list(Task.objects.filter(project=project).order_by("pk"))
    record_answers(project, [(person, task, 2) for person in people for task in tasks])
    for person in people:  # no gold items here: the lead vouches for both
        quality.annotator_override_set(project=project, annotator=person.pk, decision="include", by=lena)
    build = qrels_builds.qrels_build_create(project=project, created_by=None, enqueue=False)
    assert qrels_builds.qrels_build_run(build_id=build.pk).status == "done"
    return project


@pytest.mark.django_db
class TestQrels:
    def test_it_uploads_qrels(self, editor: Client) -> None:
        response = editor.post(
            "/api/teams/search/qrels/", {"file": upload("judged.qrels", QRELS), "name": "Judged"}
        )
        assert response.status_code == 201
        body = response.json()
        assert (body["kind"], body["name"], body["format"], body["num_queries"], body["build"]) == (
            "upload", "Judged", "trec", 20, None,
        )  # fmt: skip
        assert body["leaderboard_url"].endswith(f"/api/teams/search/leaderboard/{body['id']}/")

    def test_it_refuses_bad_qrels_naming_the_line(self, editor: Client) -> None:
        response = editor.post(
            "/api/teams/search/qrels/", {"file": upload("bad.qrels", "q1 0 d1 1\nq1 0 d2\n")}
        )
        assert response.status_code == 400
        assert response.json()["file"][0].startswith("bad.qrels:2: ")
        assert not QrelsSource.objects.exists()

    def test_it_needs_a_file_or_a_build(self, editor: Client) -> None:
        response = editor.post("/api/teams/search/qrels/", {}, content_type="application/json")
        assert response.status_code == 400
        assert response.json() == {
            "file": ["Upload a qrels file, or give a judging project's build (not both)."]
        }
        badly = editor.post("/api/teams/search/qrels/", {"build": "web v1"}, content_type="application/json")
        assert badly.status_code == 400 and list(badly.json()) == ["build"]

    def test_it_picks_a_linked_projects_build_once(self, editor: Client, linked_project: Project) -> None:
        created = editor.post("/api/teams/search/qrels/", {"build": "web:1"}, content_type="application/json")
        assert created.status_code == 201, created.json()
        body = created.json()
        assert (body["kind"], body["name"], body["build"]["project"], body["build"]["version"]) == (
            "build", "web v1", "web", 1,
        )  # fmt: skip
        again = editor.post("/api/teams/search/qrels/", {"build": "web"}, content_type="application/json")
        assert again.status_code == 200 and again.json()["id"] == body["id"]
        download = editor.get(f"/api/teams/search/qrels/{body['id']}/download/")
        assert download.status_code == 200
        assert download.content.decode().splitlines()[0] == "q0 0 d0-0 2"

    def test_it_counts_a_builds_queries_and_bytes_and_names_who_built_it(
        self, editor: Client, linked_project: Project, team: Team, lena: User, theo: User
    ) -> None:
        """A source made from a build shows its export's queries, lines and size as an uploaded file's
        (the team page's "Queries" column too), and whoever built it, however it reached the team: picked
        by an editor (v1, built by no one: the editor), or by the re-scoring after a new version (v2)."""
        v2 = qrels_builds.qrels_build_create(project=linked_project, created_by=lena, enqueue=False)
        assert qrels_builds.qrels_build_run(build_id=v2.pk).status == "done"
        v2.refresh_from_db()
        uploads.qrels_source_for_build(team=team, build=v2)  # as the re-scoring does: by no one
        picked = editor.post("/api/teams/search/qrels/", {"build": "web:1"}, content_type="application/json")
        assert picked.status_code == 201, picked.json()
        listed = {row["name"]: row for row in editor.get("/api/teams/search/qrels/").json()["results"]}
        for name, by in (("web v1", theo.username), ("web v2", lena.username)):
            row = listed[name]
            download = editor.get(f"/api/teams/search/qrels/{row['id']}/download/").content
            assert (row["num_queries"], row["num_rows"], row["size"], row["uploaded_by"]) == (
                2, 6, len(download), by,
            ), name  # fmt: skip
        assert qrels_builds.qrels_export(v2, fmt="trec").encode() == download
        page = editor.get("/teams/search/").content.decode()
        assert "web v2" in page and '<td class="num">2</td>' in page

    def test_a_migration_fills_in_the_sources_and_links_made_before(
        self, editor: Client, linked_project: Project, team: Team, theo: User
    ) -> None:
        """Rows written before the fix: a build's source without counts, a project's series (and its
        alert) linked to the project's own page; migration 0029 brings them in line, once."""
        from importlib import import_module

        from django.apps import apps

        from monitoring.models import AlertEvent, AlertRule
        from series.subjects import project_series

        migration = import_module("monitoring.migrations.0029_project_series_links_build_source_counts")
        build = linked_project.qrels_builds.get()
        source = uploads.qrels_source_for_build(team=team, build=build, by=theo)
        expected = (source.num_queries, source.size)
        QrelsSource.objects.filter(pk=source.pk).update(num_queries=None, size=0)
        series = project_series(linked_project, url=f"/projects/{linked_project.slug}/")
        rule = AlertRule.objects.create(team=team, series=series, name="floor", metric="krippendorff_alpha_ordinal",
                                        comparator="<", threshold=0.5)  # fmt: skip
        event = AlertEvent.objects.create(rule=rule, team=team, threshold=0.5, source_url=series.url,
                                          observed_at=build.created_at)  # fmt: skip
        for _ in range(2):
            migration.project_links(apps, None)
            migration.build_source_counts(apps, None)
        source.refresh_from_db()
        series.refresh_from_db()
        event.refresh_from_db()
        assert (
            (source.num_queries, source.size)
            == expected
            == (2, len(qrels_builds.qrels_export(build, fmt="trec")))
        )
        assert series.url == event.source_url == f"/projects/{linked_project.slug}/quality/"

    def test_it_refuses_an_unknown_build_and_a_project_of_another_team(
        self, editor: Client, linked_project: Project, other_team: Team
    ) -> None:
        unknown = editor.post("/api/teams/search/qrels/", {"build": "web:7"}, content_type="application/json")
        assert unknown.status_code == 400
        assert unknown.json() == {"build": ["No qrels build web:7 in the team's judging projects."]}
        linked_project.team = other_team
        linked_project.save(update_fields=["team"])
        foreign = editor.post("/api/teams/search/qrels/", {"build": "web:1"}, content_type="application/json")
        assert foreign.status_code == 400 and list(foreign.json()) == ["build"]
        assert not QrelsSource.objects.exists()

    def test_it_refuses_a_build_that_is_not_done(self, editor: Client, linked_project: Project) -> None:
        qrels_builds.qrels_build_create(project=linked_project, created_by=None, enqueue=False)
        response = editor.post(
            "/api/teams/search/qrels/", {"build": "web:2"}, content_type="application/json"
        )
        assert response.status_code == 400
        assert response.json() == {"build": ["web v2 is pending; only a done build can be used"]}

    def test_it_lets_a_viewer_read_qrels_but_not_add_them(self, viewer: Client, team: Team) -> None:
        source = uploads.qrels_upload(team=team, upload=upload("judged.qrels", QRELS))
        assert viewer.get(f"/api/teams/search/qrels/{source.pk}/").json()["id"] == source.pk
        download = viewer.get(f"/api/teams/search/qrels/{source.pk}/download/")
        assert b"".join(download.streaming_content).decode() == QRELS
        assert viewer.post("/api/teams/search/qrels/", {"file": upload("q.qrels", QRELS)}).status_code == 403
        assert (
            viewer.post(
                "/api/teams/search/qrels/", {"build": "web:1"}, content_type="application/json"
            ).status_code
            == 403
        )

    def test_it_lists_qrels_in_a_fixed_number_of_queries(
        self, editor: Client, team: Team, linked_project: Project, django_assert_max_num_queries: Any
    ) -> None:
        QrelsSource.objects.bulk_create(
            [QrelsSource(team=team, kind="upload", name=f"q{i}", file=f"qrels/q{i}") for i in range(3)]
        )
        editor.post("/api/teams/search/qrels/", {"build": "web:1"}, content_type="application/json")
        with django_assert_max_num_queries(6) as few:
            assert editor.get("/api/teams/search/qrels/").json()["count"] == 4
        QrelsSource.objects.bulk_create(
            [QrelsSource(team=team, kind="upload", name=f"q{i}", file=f"qrels/q{i}") for i in range(3, 40)]
        )
        with django_assert_max_num_queries(len(few.captured_queries)):
            assert len(editor.get("/api/teams/search/qrels/").json()["results"]) == 41


@pytest.mark.django_db
class TestMetrics:
    def test_it_lists_every_metric_of_the_registry(self, editor: Client) -> None:
        body = editor.get("/api/metrics/?page_size=1000").json()
        assert body["count"] == len(metric_registry())
        assert body["results"] == [spec.describe() for spec in metric_registry()]

    def test_it_filters_by_family(self, editor: Client) -> None:
        body = editor.get("/api/metrics/?family=agreement").json()
        assert body["count"] == len(metric_registry().family("agreement")) > 0
        assert {row["family"] for row in body["results"]} == {"agreement"}
        wrong = editor.get("/api/metrics/?family=astrology")
        assert wrong.status_code == 400 and list(wrong.json()) == ["family"]

    def test_it_resolves_any_metric_name(self, editor: Client) -> None:
        body = editor.get("/api/metrics/ndcg_cut_10/").json()
        assert (body["name"], body["direction"], body["range"]) == ("ndcg_cut", "higher", [0.0, 1.0])
        unknown = editor.get("/api/metrics/mpa/")
        assert unknown.status_code == 404 and "did you mean 'map'" in unknown.json()["detail"]


@pytest.mark.django_db
class TestSchema:
    def test_it_generates_the_schema_without_a_warning(self, tmp_path: Path) -> None:
        path = tmp_path / "schema.yaml"
        call_command("spectacular", "--fail-on-warn", "--file", str(path))
        paths = yaml.safe_load(path.read_text())["paths"]
        for endpoint in (
            "/api/teams/", "/api/teams/{team}/runs/", "/api/teams/{team}/runs/{id}/download/",
            "/api/teams/{team}/qrels/", "/api/teams/{team}/evaluations/",
            "/api/teams/{team}/evaluations/{id}/per-query/", "/api/teams/{team}/comparisons/{id}/",
            "/api/teams/{team}/leaderboard/{id}/", "/api/metrics/", "/api/projects/{slug}/pools/",
            "/api/projects/{slug}/pools/{id}/", "/api/projects/{slug}/pools/{id}/progress/",
        ):  # fmt: skip
            assert endpoint in paths, endpoint
        assert set(paths["/api/teams/{team}/runs/"]) == {"get", "post"}
        assert "multipart/form-data" in paths["/api/teams/{team}/runs/"]["post"]["requestBody"]["content"]
