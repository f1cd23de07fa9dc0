"""The project form: the scale and the guideline examples are edited as rows (a table the page's script
draws over their JSON, which stays what is submitted and validated), and the slug follows the name."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

from annotations.forms import EXAMPLE_COLUMNS, SCALE_COLUMNS, ProjectForm
from annotations.models import Project

SETTINGS = {
    "name": "Product search", "slug": "products", "description": "", "guidelines": "Rate it.",
    "overlap": 3, "gold_share_min": 0.1, "gold_share_max": 0.15, "min_seconds_per_task": 10,
    "too_fast_policy": "refuse", "session_cap_minutes": 60, "session_break_minutes": 10, "reservation_minutes": 30,
}  # fmt: skip


def form(scale: object, examples: object = ()) -> ProjectForm:
    return ProjectForm(
        {**SETTINGS, "scale": json.dumps(scale), "guideline_examples": json.dumps(list(examples))}
    )


@pytest.mark.django_db
class TestRowEditors:
    def test_it_marks_the_scale_and_examples_for_the_row_editor_and_the_slug_for_the_name(
        self, client: Client, lena: User
    ) -> None:
        client.force_login(lena)
        page = client.get("/projects/new/").content.decode()
        columns = {
            match[1]: json.loads(match[2].replace("&quot;", '"'))
            for match in re.finditer(r'<textarea name="(\w+)"[^>]*data-row-columns="([^"]*)"', page)
        }
        assert columns == {"scale": SCALE_COLUMNS, "guideline_examples": EXAMPLE_COLUMNS}
        assert 'data-add-label="Add a grade"' in page and 'data-add-label="Add an example"' in page
        assert re.search(r'<input type="text" name="slug"[^>]*data-slug-from="id_name"', page)
        assert '<script src="/static/annotations/project_form.js" defer></script>' in page
        # Without JavaScript the JSON is there to edit: the default 0-4 scale.
        assert [level["grade"] for level in json.loads(re.search(
            r'<textarea name="scale"[^>]*>(.*?)</textarea>', page, re.S)[1].replace("&quot;", '"'))] == [0, 1, 2, 3, 4]  # fmt: skip

    def test_it_accepts_the_rows_the_editor_writes_and_orders_the_grades(self) -> None:
        # The editor leaves out a blank optional definition and sends whole numbers as numbers.
        rows = [{"grade": 2, "label": "Good", "definition": "Answers it."}, {"grade": 0, "label": "Bad"}]
        example = {"query": "python try", "document": "try statement", "grade": 2, "reason": "It answers."}
        bound = form(rows, [example])
        assert bound.is_valid(), bound.errors
        assert [level["grade"] for level in bound.cleaned_data["scale"]] == [0, 2]
        assert bound.cleaned_data["guideline_examples"] == [example]

    def test_it_explains_a_bad_row_in_plain_words(self) -> None:
        blank_label = form([{"grade": 0, "label": "Bad"}, {"grade": 1, "label": " "}])
        assert blank_label.errors["scale"] == ['Each grade needs a "label".']
        typed_grade = form([{"grade": 0, "label": "Bad"}, {"grade": "two", "label": "Good"}])
        assert typed_grade.errors["scale"] == ['Each "grade" must be a whole number from 0 to 9.']
        twice = form([{"grade": 1, "label": "Bad"}, {"grade": 1, "label": "Good"}])
        assert twice.errors["scale"] == ["Grade 1 appears twice."]
        example = form([{"grade": 0, "label": "a"}, {"grade": 1, "label": "b"}], [{"query": "q", "grade": 1}])
        assert "guideline_examples" in example.errors

    def test_it_creates_the_project_from_the_rows(self, client: Client, lena: User) -> None:
        client.force_login(lena)
        scale = [{"grade": 0, "label": "Bad"}, {"grade": 1, "label": "Good", "definition": "On topic."}]
        response = client.post(
            "/projects/new/", {**SETTINGS, "scale": json.dumps(scale), "guideline_examples": "[]"}
        )
        assert response.status_code == 302
        assert Project.objects.get(slug="products").scale == scale
