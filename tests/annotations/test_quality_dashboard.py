"""The quality dashboard and its API: leads only, charts from the snapshot with the vendored plotly.js,
overrides, recompute and build buttons, build downloads and diffs; and Chromium drawing the charts."""

from __future__ import annotations

import json
import re
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from annotations import qrels
from annotations.demo import DEMO_SLUG
from annotations.models import Project, ProjectMembership, QrelsBuild, QualitySnapshot, Task
from annotations.quality import services as quality
from evalplatform.charts import plotly_js_version
from tests.annotations.conftest import QueuedTasks, build_project, record_answers
from tests.conftest import THEO, make_user, remote_assets, screenshot_path

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = screenshot_path("quality-dashboard.png")


@pytest.fixture
def people(annotators: Any) -> list[User]:
    return annotators(3)


@pytest.fixture
def project(lena: User, people: list[User]) -> Project:
    """ann0 and ann1 are accurate on the ten gold pairs; ann2 is not. All three label the other pairs."""
    project = build_project(lead=lena, annotators=people, topics=2, docs_per_topic=10, gold_per_topic=5)
    gold = list(Task.objects.filter(project=project, is_gold=True).order_by("pk"))
    ordinary = list(Task.objects.filter(project=project, is_gold=False).order_by("pk"))
    record_answers(
        project,
        [(person, task, 3, 15.0 + i) for person in people[:2] for i, task in enumerate(gold)]
        + [(people[2], task, i % 5, 4.0) for i, task in enumerate(gold)]
        + [
            (person, task, (i + k) % 2 + 1)
            for k, person in enumerate(people)
            for i, task in enumerate(ordinary)
        ],
    )
    quality.quality_snapshot_refresh(project_id=project.pk)
    return project


def done_build(project: Project, **params: Any) -> QrelsBuild:
    build = qrels.qrels_build_create(project=project, created_by=None, enqueue=False, **params)
    qrels.qrels_build_run(build_id=build.pk)
    build.refresh_from_db()
    return build


def url(project: Project, path: str = "") -> str:
    return f"/projects/{project.slug}/{path}"


def override_buttons(page: str) -> dict[str, list[str]]:
    """Each row of the annotator table: its override buttons as "decision label"."""
    table = page[
        page.index('id="annotator-table"') : page.index("</table>", page.index('id="annotator-table"'))
    ]
    return {
        re.search(r'<th scope="row"><a [^>]*>([^<]+)</a>', row)[1]: [
            f"{value} {label}"
            for value, label in re.findall(r'name="decision" value="(\w+)"[^>]*>([^<]+)</button>', row)
        ]
        for row in table.split("<tr")[2:]
    }


@pytest.mark.django_db
class TestAccess:
    def test_it_turns_away_annotators_and_non_members(
        self, client: Client, project: Project, people: list[User]
    ) -> None:
        client.force_login(people[0])
        paths = ["quality/", "qrels/diff/?old=1&new=1", "qrels/1/trec/"]
        assert [client.get(url(project, p)).status_code for p in paths] == [403, 403, 403]
        assert client.post(url(project, "quality/recompute/")).status_code == 403
        assert client.post(url(project, "qrels/")).status_code == 403
        assert client.get(f"/api/projects/{project.slug}/quality/").status_code == 403
        assert client.get(f"/api/projects/{project.slug}/qrels/").status_code == 403
        client.force_login(make_user(THEO))
        assert client.get(url(project, "quality/")).status_code == 404
        assert client.get(f"/api/projects/{project.slug}/qrels/").status_code == 404

    def test_it_sends_anonymous_visitors_to_the_login_page(self, client: Client, project: Project) -> None:
        response = client.get(url(project, "quality/"))
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")

    def test_it_links_the_dashboard_from_the_project_page(
        self, lead_client: Client, project: Project
    ) -> None:
        assert f'href="/projects/{project.slug}/quality/"' in lead_client.get(url(project)).content.decode()


@pytest.mark.django_db
class TestDashboard:
    def test_it_shows_the_charts_with_the_vendored_plotly(
        self, lead_client: Client, project: Project
    ) -> None:
        response = lead_client.get(url(project, "quality/"))
        page = response.content.decode()
        assert response.status_code == 200
        figures = {
            name: json.loads(
                re.search(rf'<script id="{name}" type="application/json">(.*?)</script>', page, re.S)[1]
            )
            for name in ("figure-accuracy-speed", "figure-kappa", "figure-labels")
        }
        assert {trace["type"] for trace in figures["figure-accuracy-speed"]["data"]} == {"scatter"}
        included = next(t for t in figures["figure-accuracy-speed"]["data"] if t["name"] == "included")
        assert sorted(included["text"]) == ["ann0", "ann1"]
        assert figures["figure-kappa"]["data"][0]["type"] == "heatmap"
        assert len(figures["figure-kappa"]["layout"]["updatemenus"][0]["buttons"]) == 3
        assert {trace["type"] for trace in figures["figure-labels"]["data"]} == {"bar"}
        assert f'<script src="/vendor/plotly-{plotly_js_version()}.min.js" defer></script>' in page
        assert remote_assets(page) == [] and "https://" not in page
        assert 'data-figure="figure-kappa"' in page
        assert "Krippendorff&#x27;s alpha, ordinal" in page and "95% CI" in page

    def test_it_serves_plotly_js_from_the_python_package(self, client: Client) -> None:
        path = f"/vendor/plotly-{plotly_js_version()}.min.js"
        plain = client.get(path)
        assert plain.status_code == 200 and plain["Content-Type"].startswith("text/javascript")
        assert plain.content.startswith(b"/**\n* plotly.js v" + plotly_js_version().encode())
        zipped = client.get(path, headers={"Accept-Encoding": "gzip, br"})
        assert zipped["Content-Encoding"] == "gzip" and len(zipped.content) < len(plain.content) / 2
        assert "immutable" in plain["Cache-Control"]
        assert client.get("/vendor/plotly-0.0.1.min.js").status_code == 404

    def test_it_says_when_there_are_no_figures_yet(self, lead_client: Client, lena: User) -> None:
        empty = build_project(lead=lena, slug="empty")
        page = lead_client.get(url(empty, "quality/")).content.decode()
        assert "No quality figures yet" in page and "plotly" not in page

    def test_it_reads_the_page_in_a_fixed_number_of_queries(
        self, lead_client: Client, project: Project, django_assert_max_num_queries: Any
    ) -> None:
        done_build(project)
        with django_assert_max_num_queries(14) as few:
            lead_client.get(url(project, "quality/"))
        for _ in range(4):
            done_build(project, tolerance=2)
        with django_assert_max_num_queries(len(few.captured_queries)):
            lead_client.get(url(project, "quality/"))

    def test_it_disqualifies_and_reinstates_an_annotator(
        self, lead_client: Client, project: Project, people: list[User], lena: User, queued: QueuedTasks,
        django_capture_on_commit_callbacks: Any,
    ) -> None:  # fmt: skip
        target = url(project, f"quality/annotators/{people[0].pk}/override/")
        with django_capture_on_commit_callbacks(execute=True):
            response = lead_client.post(target, {"decision": "exclude"}, follow=True)
        membership = ProjectMembership.objects.get(project=project, user=people[0])
        assert (membership.quality_override, membership.quality_override_by) == ("exclude", lena)
        page = response.content.decode()
        assert "Disqualified ann0" in page and "disqualified by a lead" in page
        assert queued.names() == ["annotations.tasks.quality_recompute"]
        lead_client.post(
            url(project, f"quality/annotators/{people[2].pk}/override/"), {"decision": "include"}
        )
        assert ProjectMembership.objects.get(project=project, user=people[2]).quality_override == "include"
        assert lead_client.post(target, {"decision": "maybe"}).status_code == 302
        assert (
            lead_client.post(
                url(project, f"quality/annotators/{lena.pk}/override/"), {"decision": "exclude"}
            ).status_code
            == 404
        )

    def test_it_offers_each_annotator_only_the_overrides_that_change_something(
        self, lead_client: Client, project: Project, people: list[User], lena: User
    ) -> None:
        # The thresholds keep ann0 and ann1 and drop ann2 (inaccurate on gold).
        assert override_buttons(lead_client.get(url(project, "quality/")).content.decode()) == {
            "ann0": ["exclude Disqualify"],
            "ann1": ["exclude Disqualify"],
            "ann2": ["include Reinstate"],
        }
        decide = {people[0]: "exclude", people[1]: "include", people[2]: "include"}
        for person, decision in decide.items():
            quality.annotator_override_set(project=project, annotator=person, decision=decision, by=lena)
        assert override_buttons(lead_client.get(url(project, "quality/")).content.decode()) == {
            # Disqualified, kept by the thresholds: going back to automatic is reinstating.
            "ann0": ["auto Back to automatic"],
            # Reinstated, kept by the thresholds anyway: back to automatic changes nothing yet.
            "ann1": ["exclude Disqualify", "auto Back to automatic"],
            # Reinstated, dropped by the thresholds: going back to automatic is disqualifying.
            "ann2": ["auto Back to automatic"],
        }
        quality.annotator_override_set(project=project, annotator=people[2], decision="exclude", by=lena)
        page = lead_client.get(url(project, "quality/")).content.decode()
        assert override_buttons(page)["ann2"] == ["include Reinstate", "auto Back to automatic"]
        assert "they leave out their labels (inaccurate on gold)" in page
        # A posted decision lands on the row's other buttons.
        lead_client.post(url(project, f"quality/annotators/{people[0].pk}/override/"), {"decision": "auto"})
        page = lead_client.get(url(project, "quality/")).content.decode()
        assert override_buttons(page)["ann0"] == ["exclude Disqualify"]

    def test_it_recomputes_on_demand(
        self, lead_client: Client, project: Project, queued: QueuedTasks
    ) -> None:
        response = lead_client.post(url(project, "quality/recompute/"), follow=True)
        assert "Recomputing the quality figures" in response.content.decode()
        assert queued.sent[0][2]["countdown"] == 0
        queued.broker_down = True
        response = lead_client.post(url(project, "quality/recompute/"), follow=True)
        assert "task queue is unreachable" in response.content.decode()

    def test_it_queues_a_build_from_the_form(
        self,
        lead_client: Client,
        project: Project,
        queued: QueuedTasks,
        django_capture_on_commit_callbacks: Any,
    ) -> None:
        form = {
            "aggregation": "majority",
            "tolerance": "1",
            "min_labels": "2",
            "min_accuracy": "0.7",
            "min_gold": "10",
        }
        with django_capture_on_commit_callbacks(execute=True):
            response = lead_client.post(url(project, "qrels/"), form, follow=True)
        build = QrelsBuild.objects.get(project=project)
        assert (build.version, build.status, build.aggregation) == (1, "pending", "majority")
        assert "Build v1 is queued" in response.content.decode()
        assert queued.names() == ["annotations.tasks.qrels_build"]
        assert lead_client.post(url(project, "qrels/"), {**form, "tolerance": "-1"}).status_code == 302
        assert QrelsBuild.objects.count() == 1

    def test_it_lists_builds_with_downloads(self, lead_client: Client, project: Project) -> None:
        build = done_build(project)
        page = lead_client.get(url(project, "quality/")).content.decode()
        assert build.content_hash[:12] in page and "ann2" in page
        download = lead_client.get(url(project, "qrels/1/trec/"))
        assert download.content == qrels.qrels_export(build, fmt="trec").encode()
        assert download["Content-Disposition"] == f'attachment; filename="{project.slug}-qrels-v1.txt"'
        assert lead_client.get(url(project, "qrels/1/jsonl/")).content.startswith(b'{"qid":')
        assert lead_client.get(url(project, "qrels/1/csv/")).status_code == 404
        assert lead_client.get(url(project, "qrels/7/trec/")).status_code == 404

    def test_it_shows_the_pairs_added_removed_and_changed_between_two_builds(
        self, lead_client: Client, project: Project
    ) -> None:
        strict, loose = done_build(project, tolerance=0), done_build(project, tolerance=1, aggregation="mean")
        page = lead_client.get(url(project, "quality/")).content.decode()
        assert 'name="old"' in page and 'name="new"' in page
        diff = lead_client.get(url(project, f"qrels/diff/?old={strict.version}&new={loose.version}"))
        body = diff.content.decode()
        assert diff.status_code == 200
        added = int(re.search(r'id="diff-added">(\d+)<', body)[1])
        assert added == loose.pairs_kept - strict.pairs_kept > 0
        assert int(re.search(r'id="diff-removed">(\d+)<', body)[1]) == 0
        api = lead_client.get(f"/api/projects/{project.slug}/qrels/diff/?old=1&new=2").json()
        assert len(api["added"]) == added and api["removed"] == [] and api["old"] == 1
        assert all(change["old_rel"] != change["new_rel"] for change in api["changed"])
        assert lead_client.get(url(project, "qrels/diff/?old=1")).status_code == 404

    def test_its_diff_form_reads_from_the_older_build_to_the_newer(
        self, lead_client: Client, project: Project
    ) -> None:
        done_build(project, tolerance=0)
        strict, loose = done_build(project, tolerance=0), done_build(project, tolerance=1, aggregation="mean")
        page = lead_client.get(url(project, "quality/")).content.decode()
        form = page[page.index('id="diff-form"') : page.index("</form>", page.index('id="diff-form"'))]
        assert re.search(r'<label for="diff-old">From</label>', form) and re.search(
            r'<label for="diff-new">to</label>', form
        )
        old, new = (form[form.index(f'id="diff-{name}"') :].split("</select>")[0] for name in ("old", "new"))
        assert (
            re.findall(r'<option value="(\d+)"', old)
            == re.findall(r'<option value="(\d+)"', new)
            == ["1", "2", "3"]
        )
        assert re.findall(r'<option value="(\d+)" selected', old) == ["2"]  # the previous build
        assert re.findall(r'<option value="(\d+)" selected', new) == ["3"]  # to the latest
        for query in (
            f"old={strict.version}&new={loose.version}",
            f"old={loose.version}&new={strict.version}",
        ):
            body = lead_client.get(url(project, f"qrels/diff/?{query}")).content.decode()
            assert "<h1>Qrels from v2 to v3</h1>" in body  # picked either way round, it reads older first
            assert re.search(r'id="diff-added">(\d+)</strong> pairs added in v3<', body)
            assert (
                int(re.search(r'id="diff-added">(\d+)<', body)[1]) == loose.pairs_kept - strict.pairs_kept > 0
            )
            assert "Added in v3 (not in v2)" in body and "Removed in v3 (in v2)" in body


@pytest.mark.django_db
class TestAPI:
    def test_it_reads_the_quality_snapshot(self, lead_client: Client, project: Project, lena: User) -> None:
        data = lead_client.get(f"/api/projects/{project.slug}/quality/").json()
        rows = {row["username"]: row for row in data["annotators"]}
        assert rows["ann0"]["included"] and not rows["ann2"]["included"]
        assert rows["ann2"]["reason"] == "low_accuracy" and rows["ann2"]["decision"] == "auto"
        assert data["agreement"]["all"]["measures"]["krippendorff_alpha_ordinal"]["low"] is not None
        assert data["kappa"]["annotators"] == ["ann0", "ann1", "ann2"]
        assert "coincidence" in data["statistics"]["all"]["agreement_stats"]
        QualitySnapshot.objects.all().delete()
        assert lead_client.get(f"/api/projects/{project.slug}/quality/").status_code == 404

    def test_it_overrides_an_annotator(
        self, lead_client: Client, project: Project, queued: QueuedTasks
    ) -> None:
        endpoint = f"/api/projects/{project.slug}/quality/annotators/ann2/override/"
        response = lead_client.post(endpoint, {"decision": "include"}, content_type="application/json")
        assert response.status_code == 200 and response.json()["decision"] == "include"
        rows = lead_client.get(f"/api/projects/{project.slug}/quality/").json()["annotators"]
        assert next(r for r in rows if r["username"] == "ann2")["reason"] == "reinstated"
        missing = f"/api/projects/{project.slug}/quality/annotators/nobody/override/"
        assert (
            lead_client.post(missing, {"decision": "include"}, content_type="application/json").status_code
            == 404
        )

    def test_it_creates_lists_reads_and_exports_builds(
        self,
        lead_client: Client,
        project: Project,
        queued: QueuedTasks,
        django_capture_on_commit_callbacks: Any,
    ) -> None:
        base = f"/api/projects/{project.slug}/qrels/"
        with django_capture_on_commit_callbacks(execute=True):
            created = lead_client.post(
                base, {"aggregation": "median", "min_gold": 5}, content_type="application/json"
            )
        assert created.status_code == 202
        assert created.json()["status"] == "pending" and created.json()["parameters"]["min_gold"] == 5
        assert created.json()["exports"] == {}
        assert lead_client.get(f"{base}1/export/trec/").status_code == 409
        qrels.qrels_build_run(build_id=QrelsBuild.objects.get().pk)  # what the worker does
        detail = lead_client.get(f"{base}1/").json()
        assert detail["status"] == "done" and len(detail["content_hash"]) == 64
        assert detail["exports"]["trec"] == f"{base}1/export/trec/"
        trec = lead_client.get(detail["exports"]["trec"])
        assert trec["Content-Type"].startswith("text/plain")
        assert trec.content == qrels.qrels_export(QrelsBuild.objects.get(), fmt="trec").encode()
        jsonl = lead_client.get(detail["exports"]["jsonl"])
        first = json.loads(jsonl.content.splitlines()[0])
        assert set(first) == {"qid", "doc_id", "rel", "score", "n_labels", "labels"}
        assert lead_client.get(f"{base}1/export/csv/").status_code == 404
        assert [b["version"] for b in lead_client.get(base).json()] == [1]
        assert (
            lead_client.post(base, {"aggregation": "mode"}, content_type="application/json").status_code
            == 400
        )
        assert lead_client.get(f"{base}9/").status_code == 404

    def test_it_describes_the_endpoints_in_the_openapi_schema(self, client: Client) -> None:
        schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
        for path in (
            "/api/projects/{slug}/quality/",
            "/api/projects/{slug}/quality/recompute/",
            "/api/projects/{slug}/quality/annotators/{username}/override/",
            "/api/projects/{slug}/qrels/",
            "/api/projects/{slug}/qrels/{version}/",
            "/api/projects/{slug}/qrels/{version}/export/{fmt}/",
            "/api/projects/{slug}/qrels/diff/",
        ):
            assert path in schema["paths"], path
        assert set(schema["paths"]["/api/projects/{slug}/qrels/"]) >= {"get", "post"}


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
class TestDashboardInTheBrowser:
    def test_it_draws_the_demo_projects_charts_in_chromium(self, page: Any, live_server: Any) -> None:
        call_command("load_demo", stdout=StringIO())
        page.goto(f"{live_server.url}/accounts/login/")
        page.get_by_label("Username").fill("lead")
        page.get_by_label("Password").fill("demo-lead-pass")
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(f"{live_server.url}/")
        requests: list[str] = []
        page.on("request", lambda request: requests.append(request.url))
        page.goto(f"{live_server.url}/projects/{DEMO_SLUG}/")
        page.get_by_role("link", name="Quality and qrels").click()
        page.wait_for_selector("#figure-kappa-chart.js-plotly-plot .main-svg", timeout=20_000)
        assert page.locator(".js-plotly-plot").count() == 3
        # carol, dave, eve and mallory answered gold; alice and bob have not started.
        assert page.locator("#figure-accuracy-speed-chart .scatterlayer .point").count() == 4
        assert all(r.startswith(live_server.url) for r in requests), requests
        excluded = page.locator("#build-table tbody tr").first.locator("td").nth(4).inner_text()
        assert "eve" in excluded and "mallory" in excluded

        def buttons(name: str) -> list[str]:
            row = page.locator("#annotator-table tbody tr", has=page.get_by_role("rowheader", name=name))
            return row.get_by_role("button").all_inner_texts()

        # The thresholds keep carol and drop eve: one button each, the one that changes that.
        assert (buttons("carol"), buttons("eve")) == (["Disqualify"], ["Reinstate"])
        page.locator(".updatemenu-button", has_text="Quadratic weights").click()
        SCREENSHOT.parent.mkdir(exist_ok=True)
        page.screenshot(path=str(SCREENSHOT), full_page=True)
        assert SCREENSHOT.stat().st_size > 20_000
