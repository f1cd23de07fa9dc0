"""Editing a stream after it is made: its name, description, schedule and parameters (the new-stream form's
fields and checks, less the slug and the dimension), from the web and the API (PATCH); and deleting it with
a confirmation naming what goes (snapshots and files, monitor runs and their values, the alert rules on its
series and their alerts, its periodic task), from the web and the API (DELETE)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django_celery_beat.models import PeriodicTask

from evalcore.alerts import DEFAULT_EMBEDDING_RULES
from evalcore.embeddings import MonitorParams
from evalplatform.models import Team
from monitoring.embeddings import services as monitors
from monitoring.embeddings.forms import StreamEditForm
from monitoring.models import AlertEvent, AlertRule, EmbeddingSnapshot, EmbeddingStream, MonitorRun
from series.models import MetricValue, Series
from tests.conftest import THEO, QueuedTasks, browser_log_in, screenshot_path
from tests.monitoring.test_streams import PARAMS, embeddings, make_stream, npy_upload

PAGE = "/teams/search/streams/query-encoder/"
API = "/api/teams/search/streams/query-encoder/"


def logged_in(client: Client, user: User) -> Client:
    client.force_login(user)
    return client


def monitor_all(stream: EmbeddingStream) -> None:
    for run in monitors.stream_monitor_now(stream=stream, enqueue=False):
        monitors.monitor_run(run_id=run.pk)


@pytest.fixture
def monitored(team: Team, queued: QueuedTasks) -> EmbeddingStream:
    """A stream scheduled hourly, with a reference and a shifted snapshot, both monitored."""
    stream = make_stream(team, every_minutes=60)
    reference = monitors.snapshot_upload(stream=stream, upload=npy_upload(embeddings(400, seed=1), "ref.npy"))
    monitors.stream_reference_set(stream=stream, snapshot=reference, enqueue=False)
    monitors.snapshot_upload(stream=stream, upload=npy_upload(embeddings(400, seed=2, shift=0.5), "s.npy"))
    monitor_all(stream)
    return stream


def form_data(stream: EmbeddingStream, **changes: Any) -> dict[str, Any]:
    """What the edit page posts when the editor changes only `changes` (a box left unticked is not sent)."""
    form = StreamEditForm(stream=stream)
    data = {name: form[name].value() for name in form.fields}
    data |= changes
    return {
        name: "on" if value is True else value
        for name, value in data.items()
        if value is not None and value is not False
    }


@pytest.mark.django_db
class TestServices:
    def test_it_names_what_goes_with_a_stream_with_counts(self, monitored: EmbeddingStream) -> None:
        lines = {line.what: line for line in monitors.stream_delete_consequences(monitored)}
        series = Series.objects.get(kind="stream", object_id=monitored.pk)
        values = MetricValue.objects.filter(series=series).count()
        events = AlertEvent.objects.filter(rule__series=series).count()
        size = sum(EmbeddingSnapshot.objects.filter(stream=monitored).values_list("size", flat=True))
        assert (
            lines["snapshots"].count == 2
            and "2 snapshots (1 reference among them)" in lines["snapshots"].text
        )
        assert f"{size // 1024}" in lines["snapshots"].text.replace(",", "")  # "... (N KB)"
        assert lines["runs"].count == MonitorRun.objects.filter(stream=monitored).count() == 2
        assert values > 30 and f"2 monitor runs, with {values} metric values" in lines["runs"].text
        assert lines["rules"].count == len(DEFAULT_EMBEDDING_RULES)
        assert f"with {events} alert" in lines["rules"].text and "high_avg_cosine" in lines["rules"].text
        assert lines["schedule"].text == "Its schedule (every 60 minutes) and its periodic task."

    def test_it_deletes_a_stream_with_everything_it_names(
        self, monitored: EmbeddingStream, django_capture_on_commit_callbacks: Any
    ) -> None:
        files = [Path(s.file.path) for s in monitored.snapshots.all()]
        task = monitored.periodic_task_id
        assert all(f.exists() for f in files) and AlertRule.objects.filter(series__object_id=monitored.pk)
        assert MetricValue.objects.filter(job_type="monitoring.monitorrun").exists()
        with django_capture_on_commit_callbacks(execute=True):
            monitors.stream_delete(stream=monitored)
        assert not EmbeddingStream.objects.exists() and not EmbeddingSnapshot.objects.exists()
        assert not MonitorRun.objects.exists() and not Series.objects.filter(kind="stream").exists()
        assert not AlertRule.objects.exists() and not AlertEvent.objects.exists()
        assert not MetricValue.objects.filter(job_type="monitoring.monitorrun").exists()
        assert not PeriodicTask.objects.filter(pk=task).exists()
        assert not any(f.exists() for f in files)

    def test_it_renames_relabelling_the_series_and_the_periodic_task(
        self, monitored: EmbeddingStream
    ) -> None:
        monitors.stream_update(stream=monitored, name="  Doc encoder ", description="v2")
        monitored.refresh_from_db()
        assert (monitored.name, monitored.description, monitored.slug) == (
            "Doc encoder",
            "v2",
            "query-encoder",
        )
        assert Series.objects.get(kind="stream", object_id=monitored.pk).label == "stream Doc encoder"
        assert "Doc encoder" in PeriodicTask.objects.get(pk=monitored.periodic_task_id).description

    def test_it_refuses_a_blank_name_or_an_unknown_parameter_and_changes_nothing(
        self, monitored: EmbeddingStream
    ) -> None:
        with pytest.raises(monitors.MonitorInputError) as blank:
            monitors.stream_update(stream=monitored, name=" ")
        assert blank.value.field == "name"
        with pytest.raises(monitors.MonitorInputError, match="Unknown monitor parameter") as unknown:
            monitors.stream_update(stream=monitored, params={"n_permutation": 5})
        assert unknown.value.field == "params"
        with pytest.raises(monitors.MonitorInputError) as both:
            monitors.stream_update(stream=monitored, schedule=(5, "* * * * *"), name="x")
        assert both.value.field == "every_minutes"
        monitored.refresh_from_db()
        assert (monitored.name, monitored.params, monitored.every_minutes) == ("Query encoder", PARAMS, 60)


@pytest.mark.django_db
class TestPages:
    def test_the_edit_form_shows_the_streams_values_without_slug_or_dimension(
        self, client: Client, theo: User, monitored: EmbeddingStream
    ) -> None:
        page = logged_in(client, theo).get(PAGE + "edit/").content.decode()
        assert "Edit the stream Query encoder" in page and 'value="Query encoder"' in page
        assert 'name="n_permutations" value="100"' in page and 'name="every_minutes" value="60"' in page
        assert 'name="alpha" value="0.05"' in page  # a default: not stored, shown
        assert 'name="slug"' not in page and 'name="dimension"' not in page
        assert 'id="stream-edit"' in client.get(PAGE).content.decode()

    def test_it_saves_name_schedule_and_parameters_and_later_runs_use_them(
        self, client: Client, theo: User, monitored: EmbeddingStream
    ) -> None:
        editor = logged_in(client, theo)
        data = form_data(monitored, name="Doc encoder", every_minutes="", crontab="0 * * * *",
                         n_permutations=150, calibration_splits=20, dead_relative=False)  # fmt: skip
        saved = editor.post(PAGE + "edit/", data)
        assert saved.status_code == 302 and saved["Location"] == PAGE
        monitored.refresh_from_db()
        # Back to its default, calibration_splits is no longer kept; the rest are the changed values.
        assert monitored.params == {
            "n_permutations": 150, "uniformity_pairs": 5000, "sample_size": 2000, "dead_relative": False,
        }  # fmt: skip
        assert (monitored.name, monitored.every_minutes, monitored.crontab) == (
            "Doc encoder",
            None,
            "0 * * * *",
        )
        task = PeriodicTask.objects.get(pk=monitored.periodic_task_id)
        assert task.interval is None and task.crontab.minute == "0" and task.crontab.hour == "*"
        old = {run.pk: run.params for run in MonitorRun.objects.filter(stream=monitored)}
        assert all(params["n_permutations"] == 100 for params in old.values())
        monitors.snapshot_upload(stream=monitored, upload=npy_upload(embeddings(400, seed=3), "t.npy"))
        monitor_all(monitored)
        new = MonitorRun.objects.filter(stream=monitored).exclude(pk__in=list(old)).get()
        assert new.params == {**MonitorParams().to_dict(), **monitored.params} and new.status == "done"
        assert {run.pk: run.params for run in MonitorRun.objects.filter(pk__in=list(old))} == old

    def test_it_refuses_each_bad_value_beside_its_field_and_saves_nothing(
        self, client: Client, theo: User, monitored: EmbeddingStream
    ) -> None:
        editor = logged_in(client, theo)
        data = form_data(monitored, name="", every_minutes=5, crontab="* * * * *", n_permutations=10**6)
        refused = editor.post(PAGE + "edit/", data)
        page = refused.content.decode()
        assert refused.status_code == 400
        assert "This field is required." in page and "Choose every_minutes or a crontab, not both." in page
        assert "Ensure this value is less than or equal to 100000." in page
        monitored.refresh_from_db()
        assert (monitored.name, monitored.params, monitored.every_minutes) == ("Query encoder", PARAMS, 60)

    def test_it_confirms_a_deletion_naming_what_goes_and_an_empty_post_deletes_nothing(
        self, client: Client, theo: User, monitored: EmbeddingStream
    ) -> None:
        editor = logged_in(client, theo)
        page = editor.get(PAGE + "delete/").content.decode()
        assert "Delete the stream Query encoder?" in page
        assert "2 snapshots (1 reference among them)" in page and "2 monitor runs, with" in page
        assert f"{len(DEFAULT_EMBEDDING_RULES)} alert rules on its series" in page
        assert "Its schedule (every 60 minutes) and its periodic task." in page
        assert editor.post(PAGE + "delete/").status_code == 400
        assert editor.post(PAGE + "delete/", {"confirm": "delete stream other"}).status_code == 400
        assert EmbeddingStream.objects.filter(pk=monitored.pk).exists()
        done = editor.post(PAGE + "delete/", {"confirm": "delete stream query-encoder"})
        assert done.status_code == 302 and done["Location"] == "/teams/search/#streams"
        assert not EmbeddingStream.objects.exists() and not MonitorRun.objects.exists()
        assert "Deleted the stream Query encoder." in editor.get("/teams/search/").content.decode()

    def test_a_viewer_may_not_edit_or_delete(
        self, client: Client, vera: User, monitored: EmbeddingStream
    ) -> None:
        viewer = logged_in(client, vera)
        for action in ("edit/", "delete/"):
            assert viewer.get(PAGE + action).status_code == 403
            assert viewer.post(PAGE + action, {"confirm": "delete stream query-encoder"}).status_code == 403
        page = viewer.get(PAGE).content.decode()
        assert 'id="stream-edit"' not in page and 'id="stream-delete"' not in page
        assert EmbeddingStream.objects.get(pk=monitored.pk).name == "Query encoder"


@pytest.mark.django_db
class TestApi:
    def test_it_patches_name_parameters_and_schedule(
        self, client: Client, theo: User, monitored: EmbeddingStream
    ) -> None:
        editor = logged_in(client, theo)
        body = {"name": "Doc encoder", "params": {"n_permutations": 50}, "crontab": "*/30 * * * *"}
        response = editor.patch(API, body, content_type="application/json")
        assert response.status_code == 200, response.json()
        got = response.json()
        assert (got["name"], got["params"], got["every_minutes"], got["crontab"]) == (
            "Doc encoder", {"n_permutations": 50}, None, "*/30 * * * *",
        )  # fmt: skip
        assert got["schedule"] == "cron */30 * * * *" and got["periodic_task"]["enabled"] is True
        # Fields left out stay.
        kept = editor.patch(API, {"description": "v2"}, content_type="application/json").json()
        assert (kept["name"], kept["description"], kept["crontab"]) == ("Doc encoder", "v2", "*/30 * * * *")

    def test_it_refuses_a_bad_patch_naming_the_field(
        self, client: Client, theo: User, monitored: EmbeddingStream
    ) -> None:
        editor = logged_in(client, theo)
        bad = editor.patch(API, {"params": {"alpha": 2}}, content_type="application/json")
        assert (
            bad.status_code == 400 and list(bad.json()) == ["params"] and "alpha" in bad.json()["params"][0]
        )
        both = editor.patch(
            API, {"every_minutes": 5, "crontab": "* * * * *"}, content_type="application/json"
        )
        assert both.status_code == 400 and list(both.json()) == ["every_minutes"]
        blank = editor.patch(API, {"name": ""}, content_type="application/json")
        assert blank.status_code == 400 and list(blank.json()) == ["name"]
        monitored.refresh_from_db()
        assert (monitored.name, monitored.params, monitored.every_minutes) == ("Query encoder", PARAMS, 60)

    def test_it_deletes_a_stream_for_an_editor_only(
        self, client: Client, theo: User, vera: User, monitored: EmbeddingStream
    ) -> None:
        viewer = logged_in(Client(), vera)
        assert viewer.delete(API).status_code == 403
        assert viewer.patch(API, {"name": "x"}, content_type="application/json").status_code == 403
        assert logged_in(client, theo).delete(API).status_code == 204
        assert not EmbeddingStream.objects.exists() and not AlertRule.objects.exists()
        assert client.get(API).status_code == 404


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_editor_edits_and_deletes_a_stream_in_chromium(
    page: Any, live_server: Any, team: Team, theo: User, queued: QueuedTasks
) -> None:
    stream = make_stream(team, every_minutes=60)
    reference = monitors.snapshot_upload(stream=stream, upload=npy_upload(embeddings(300, seed=1), "ref.npy"))
    monitors.stream_reference_set(stream=stream, snapshot=reference, enqueue=False)
    monitor_all(stream)
    stored = Path(reference.file.path)
    browser_log_in(page, live_server, THEO.username, THEO.password)
    page.goto(f"{live_server.url}{PAGE}")

    # Edit: a value past its bound is refused by the server beside its field; then saved.
    page.locator("#stream-edit").click()
    assert page.get_by_label("N permutations", exact=True).input_value() == "100"
    page.get_by_label("Name", exact=True).fill("Doc encoder")
    page.get_by_label("N permutations", exact=True).evaluate("input => input.removeAttribute('max')")
    page.get_by_label("N permutations", exact=True).fill("1000000")
    page.get_by_role("button", name="Save").click()
    assert "less than or equal to 100000" in page.locator("#stream-form").inner_text()
    page.get_by_label("N permutations", exact=True).fill("150")
    page.get_by_label("Every minutes", exact=True).fill("30")
    page.get_by_role("button", name="Save").click()
    assert page.get_by_role("heading", level=1).inner_text() == "Doc encoder"
    assert page.locator("#stream-schedule").inner_text() == "every 30 minutes"
    stream.refresh_from_db()
    assert stream.params["n_permutations"] == 150 and stream.every_minutes == 30

    # Delete: the confirmation names what goes, with counts.
    page.locator("#stream-delete").click()
    assert page.get_by_role("heading", level=1).inner_text() == "Delete the stream Doc encoder?"
    consequences = page.locator("#consequences").inner_text()
    assert "1 snapshot (1 reference among them)" in consequences and "1 monitor run, with" in consequences
    page.screenshot(path=str(screenshot_path("delete-stream.png")), full_page=True)
    page.get_by_role("button", name="Delete the stream").click()
    assert page.get_by_role("status").inner_text().startswith("Deleted the stream Doc encoder")
    assert "Doc encoder" not in page.locator("#streams").inner_text()
    assert not EmbeddingStream.objects.exists() and not MonitorRun.objects.exists() and not stored.exists()
