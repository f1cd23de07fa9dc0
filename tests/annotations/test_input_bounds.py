"""Numbers beyond what the database columns hold are a 400 naming the field, never a 500 from an overflow."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.test import Client

from annotations.models import QrelsBuild
from evalcore.judging import QrelsError, QrelsParams
from tests.annotations.conftest import build_project


def post(client: Client, url: str, body: dict[str, object]):  # type: ignore[no-untyped-def]
    return client.post(url, json.dumps(body), content_type="application/json")


@pytest.mark.django_db
class TestQrelsParameterBounds:
    @pytest.mark.parametrize(
        ("field", "value"),
        [("min_labels", 32_768), ("min_gold", 2**31), ("min_labels", 2**63), ("tolerance", 1e300)],
    )
    def test_the_api_answers_400_naming_the_field(
        self, client: Client, lena: User, field: str, value: float
    ) -> None:
        project = build_project(lead=lena)
        client.force_login(lena)
        answer = post(client, f"/api/projects/{project.slug}/qrels/", {field: value})
        assert answer.status_code == 400, answer.content[:300]
        assert field in answer.json()
        assert not QrelsBuild.objects.exists()

    def test_the_largest_allowed_values_are_accepted(self, client: Client, lena: User) -> None:
        project = build_project(lead=lena)
        client.force_login(lena)
        body = {"min_labels": QrelsParams.MAX_MIN_LABELS, "min_gold": QrelsParams.MAX_MIN_GOLD}
        assert post(client, f"/api/projects/{project.slug}/qrels/", body).status_code == 202

    def test_the_web_form_shows_the_error(self, client: Client, lena: User) -> None:
        project = build_project(lead=lena)
        client.force_login(lena)
        page = client.post(
            f"/projects/{project.slug}/qrels/",
            {"aggregation": "median", "tolerance": "1", "min_labels": "32768", "min_accuracy": "0.7",
             "min_gold": "2147483648"},
            follow=True,
        )  # fmt: skip
        assert page.status_code == 200
        shown = [str(message) for message in page.context["messages"]]
        assert any(m.startswith("min_labels:") for m in shown) and any(
            m.startswith("min_gold:") for m in shown
        )
        assert not QrelsBuild.objects.exists()

    def test_the_parameters_refuse_it_themselves(self) -> None:
        for params in ({"min_labels": 32_768}, {"min_gold": 2**31}, {"tolerance": float("inf")}):
            with pytest.raises(QrelsError, match="must be"):
                QrelsParams(**params)  # type: ignore[arg-type]


@pytest.mark.django_db
class TestIdBounds:
    def test_an_assignment_id_past_bigint_is_a_400(self, client: Client, lena: User, alice: User) -> None:
        project = build_project(lead=lena, annotators=[alice])
        client.force_login(alice)
        for path in ("submit", "skip"):
            answer = post(client, f"/api/projects/{project.slug}/{path}/", {"assignment": 2**63, "grade": 1})
            assert answer.status_code == 400 and "assignment" in answer.json(), answer.content[:300]
