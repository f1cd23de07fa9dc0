"""A project's slug may not be a fixed word under /projects/: `new` would hide the project behind the
creation form at /projects/new/. The same holds for teams and streams, whose routes have no fixed word
at the slug's place today; the URL tests below notice one being added."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import URLPattern

from annotations import api_urls as annotation_api_urls
from annotations import urls as annotation_urls
from annotations.models import RESERVED_PROJECT_SLUGS, Project
from evalplatform.models import RESERVED_TEAM_SLUGS
from monitoring import api_urls as monitoring_api_urls
from monitoring import urls as monitoring_urls
from monitoring.embeddings.streams import RESERVED_STREAM_SLUGS
from tests.annotations.conftest import build_project

FORM = {
    "name": "Product search", "description": "", "guidelines": "Rate it.",
    "scale": '[{"grade": 0, "label": "Bad"}, {"grade": 1, "label": "Good"}]', "guideline_examples": "[]",
    "overlap": 3, "gold_share_min": 0.1, "gold_share_max": 0.15, "min_seconds_per_task": 10,
    "too_fast_policy": "refuse", "session_cap_minutes": 60, "session_break_minutes": 10, "reservation_minutes": 30,
}  # fmt: skip


def fixed_words_after(prefix: str, patterns: list[Any]) -> set[str]:
    """The literal path segments right after `prefix` in these URL patterns (where a slug would go)."""
    words = set()
    for pattern in patterns:
        assert isinstance(pattern, URLPattern)
        route = str(pattern.pattern)
        if route.startswith(prefix) and len(route) > len(prefix):
            segment = route[len(prefix) :].split("/")[0]
            if not segment.startswith("<"):
                words.add(segment)
    return words


@pytest.mark.django_db
class TestReservedProjectSlugs:
    def test_it_refuses_new_in_the_creation_form_naming_the_field(self, lead_client: Client) -> None:
        response = lead_client.post("/projects/new/", {**FORM, "slug": "new"})
        assert response.status_code == 200
        assert response.context["form"].errors["slug"] == [
            "'new' is reserved: /projects/new/ is another page. Choose another slug."
        ]
        assert not Project.objects.filter(slug="new").exists()

    def test_it_refuses_new_as_a_projects_new_slug_in_its_settings(
        self, lead_client: Client, lena: User
    ) -> None:
        project = build_project(lead=lena, slug="web")
        response = lead_client.post(f"/projects/{project.slug}/settings/", {**FORM, "slug": "new"})
        assert response.status_code == 200
        assert "slug" in response.context["form"].errors
        project.refresh_from_db()
        assert project.slug == "web"

    def test_it_refuses_it_in_model_validation_whatever_the_case(self, lena: User) -> None:
        with pytest.raises(ValidationError) as refused:
            Project(slug="New", name="x", created_by=lena).full_clean()
        assert list(refused.value.message_dict) == ["slug"]

    def test_it_still_takes_a_slug_that_merely_starts_with_a_reserved_word(self, lead_client: Client) -> None:
        response = lead_client.post("/projects/new/", {**FORM, "slug": "new-search"})
        assert response.status_code == 302
        assert Project.objects.filter(slug="new-search").exists()


class TestRoutesThatShadowSlugs:
    def test_it_reserves_every_fixed_word_under_projects(self) -> None:
        words = fixed_words_after("projects/", annotation_urls.urlpatterns + annotation_api_urls.urlpatterns)
        assert words == {"new"}
        assert words <= RESERVED_PROJECT_SLUGS

    def test_it_reserves_every_fixed_word_where_a_team_or_stream_slug_goes(self) -> None:
        # teams/new/ and teams/<team>/streams/new/ are pages: a team or a stream may not be named "new".
        patterns = monitoring_urls.urlpatterns + monitoring_api_urls.urlpatterns
        assert fixed_words_after("teams/", patterns) <= RESERVED_TEAM_SLUGS
        assert fixed_words_after("teams/<slug:team>/streams/", patterns) <= RESERVED_STREAM_SLUGS
