"""The demo opens an alert in each family, on the team's alerts page."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from monitoring.models import AlertEvent


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
