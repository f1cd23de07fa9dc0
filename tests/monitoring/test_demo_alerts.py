"""The demo opens an alert in each family, on the team's alerts page; what a team member who is not a
member of the judging project (analyst) reads about it there links only to pages the member can open."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from annotations.models import ProjectMembership
from monitoring.models import AlertEvent, AlertRule, QrelsSource


@pytest.mark.django_db(transaction=True)
def test_it_opens_an_alert_in_each_family_of_the_demo(queued: Any) -> None:
    call_command("load_demo", stdout=io.StringIO())
    open_events = AlertEvent.objects.filter(team__slug="search", status="open")
    families = set(open_events.values_list("rule__series__family", flat=True))
    assert families == {"retrieval", "embedding", "recsys", "fraud", "agreement", "annotator"}
    client = Client()
    client.force_login(User.objects.get(username="analyst"))
    page = client.get("/teams/search/alerts/").content.decode()
    for event in open_events.select_related("rule__series"):
        assert f'id="alert-{event.pk}"' in page and event.rule.series.label in page


@pytest.mark.django_db(transaction=True)
def test_the_demos_alerts_and_qrels_read_right_to_a_team_member_outside_the_project(queued: Any) -> None:
    call_command("load_demo", stdout=io.StringIO())
    analyst = User.objects.get(username="analyst")
    assert not ProjectMembership.objects.filter(project__slug="python-help", user=analyst).exists()
    client = Client()
    client.force_login(analyst)
    # The project's alerts link to its quality page, as a live recompute's do, not to its own page.
    quality = reverse("annotations:quality", args=["python-help"])
    project_events = AlertEvent.objects.filter(
        team__slug="search", rule__series__kind__in=["project", "annotator"]
    )
    assert {event.source_url for event in project_events} == {quality}
    assert {event.rule.series.url for event in project_events.select_related("rule__series")} == {quality}
    # Every link to a project's page on the pages the analyst reads opens for the analyst.
    pages = ["/", "/teams/search/", "/teams/search/alerts/", quality]
    links = {
        href.split("#")[0]
        for page in pages
        for href in re.findall(r'href="(/projects/[^"]*)"', client.get(page).content.decode())
    }
    assert quality in links
    assert {link: client.get(link).status_code for link in links} == dict.fromkeys(links, 200)
    page = client.get(quality).content.decode()
    assert "Python help search" in page and 'href="/projects/python-help/"' not in page
    assert "/projects/python-help/settings/" not in page
    # The retrieval rule has no channel: its alert was sent to no one, and says so.
    rule = AlertRule.objects.get(team__slug="search", name="dense_lsa_ndcg_floor")
    settings_page = client.get(f"/teams/search/alerts/rules/{rule.pk}/settings/").content.decode()
    assert "notifies nobody" in settings_page and rule.events.exists()
    assert "no (no channel)" in settings_page.split('id="rule-events"')[1]
    # The project's qrels versions in the team count their queries and bytes, and name who built them.
    rows = {row["name"]: row for row in client.get("/api/teams/search/qrels/").json()["results"]}
    for source in QrelsSource.objects.filter(team__slug="search", kind="build").select_related(
        "build__created_by"
    ):
        row = rows[source.name]
        assert row["num_queries"] == 10 and row["size"] > 0, row
        assert row["uploaded_by"] == getattr(source.build.created_by, "username", None), row
    assert {"python-help v1", "python-help v2"} <= set(rows)
