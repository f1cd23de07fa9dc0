"""Every HTML page carries a Content-Security-Policy that allows scripts from this site only; the pages,
the API docs (Swagger UI and Redoc, from drf-spectacular-sidecar) and the Django admin still work under
it in a real Chromium, with no violation reported."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from evalplatform.csp import POLICY, REDOC_POLICY
from tests.conftest import LENA, browser_log_in

ROOT = Path(__file__).resolve().parents[2]
REDOCLY_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"
TEMPLATE_FOLDERS = ["annotations/templates", "monitoring/templates", "evalplatform/templates"]


def csp_violations(page: Any) -> list[str]:
    """Collects the console's CSP reports from now on (Chromium logs each refused load or inline code)."""
    seen: list[str] = []
    page.on(
        "console",
        lambda message: seen.append(message.text) if "Content Security Policy" in message.text else None,
    )
    return seen


@pytest.mark.django_db
class TestPolicyHeader:
    def test_it_sets_the_policy_on_html_pages(self, client: Client) -> None:
        response = client.get("/accounts/login/")
        assert response["Content-Security-Policy"] == POLICY
        assert "script-src 'self';" in POLICY and "frame-ancestors 'none'" in POLICY
        assert "object-src 'none'" in POLICY and "unsafe-eval" not in POLICY

    def test_it_leaves_json_alone(self, client: Client) -> None:
        assert "Content-Security-Policy" not in client.get("/healthz")

    def test_it_covers_the_api_docs_and_the_admin(self, client: Client, lena: User) -> None:
        lena.is_staff = lena.is_superuser = True
        lena.save()
        client.force_login(lena)
        for path in ["/api/docs/", "/admin/", "/admin/axes/accessattempt/"]:
            response = client.get(path)
            assert response.status_code == 200, path
            assert response["Content-Security-Policy"] == POLICY, path
        # Redoc's only difference: its search index runs in a web worker made from a blob: URL.
        assert client.get("/api/redoc/")["Content-Security-Policy"] == f"{POLICY}; worker-src 'self' blob:"
        assert REDOC_POLICY.startswith(POLICY)

    def test_it_serves_swagger_uis_start_up_script_as_a_file(self, client: Client, lena: User) -> None:
        client.force_login(lena)
        page = client.get("/api/docs/").content.decode()
        assert "<script>" not in page
        script = client.get("/api/docs/?script=")
        assert script["Content-Type"].startswith("application/javascript")

    def test_it_loads_nothing_from_another_site_on_the_redoc_page(self, client: Client, lena: User) -> None:
        client.force_login(lena)
        page = client.get("/api/redoc/").content.decode()
        assert "https://" not in page and "<script>" not in page


#: Templates of files the site never renders: a downloaded report (`monitoring.reports`) carries plotly.js
#: and its chart loader inline to open offline, and is sent as an attachment under `csp.DOWNLOAD_POLICY`
#: (a sandbox; tests/monitoring/test_reports.py checks both).
OFFLINE_FILES = frozenset({"monitoring/templates/monitoring/reports/base.html"})


class TestTemplates:
    def test_it_finds_no_inline_script_in_our_templates(self) -> None:
        inline = []
        for folder in TEMPLATE_FOLDERS:
            for template in (ROOT / folder).rglob("*.html"):
                if str(template.relative_to(ROOT)) in OFFLINE_FILES:
                    continue
                text = template.read_text()
                if "<script>" in text or " onclick=" in text or " onload=" in text or "javascript:" in text:
                    inline.append(str(template.relative_to(ROOT)))
        assert inline == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
class TestUnderTheBrowser:
    def test_it_draws_swagger_ui_and_redoc_without_a_violation(  # type: ignore[no-untyped-def]
        self, page, live_server, lena: User
    ) -> None:
        violations = csp_violations(page)
        browser_log_in(page, live_server, LENA.username, LENA.password)
        page.goto(f"{live_server.url}/api/docs/")
        page.wait_for_selector(".swagger-ui .info .title", timeout=30_000)
        assert "evalplatform API" in page.locator(".swagger-ui .info .title").inner_text()
        page.wait_for_selector(".opblock-tag", timeout=30_000)
        assert violations == []
        page.goto(f"{live_server.url}/api/redoc/")
        page.wait_for_selector("h1:has-text('evalplatform API')", timeout=30_000)
        # Redoc's bundle always asks cdn.redoc.ly for the logo of its "API docs by Redocly" link; the
        # policy refuses that third-party request (as it should) and Redoc then leaves the image out.
        assert [text for text in violations if REDOCLY_LOGO not in text] == []

    def test_it_keeps_the_django_admin_working(self, page, live_server, lena: User) -> None:  # type: ignore[no-untyped-def]
        lena.is_staff = lena.is_superuser = True
        lena.save()
        violations = csp_violations(page)
        page.goto(f"{live_server.url}/admin/login/")
        page.get_by_label("Username").fill(LENA.username)
        page.get_by_label("Password").fill(LENA.password)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(f"{live_server.url}/admin/")
        page.goto(f"{live_server.url}/admin/auth/user/{lena.pk}/change/")
        # The admin's own scripts run: the date widgets and the "show" toggles are drawn by JavaScript.
        page.wait_for_selector(".datetimeshortcuts", timeout=10_000)
        page.goto(f"{live_server.url}/admin/axes/accessattempt/")
        assert page.get_by_role("heading", level=1).inner_text().lower().startswith("select access attempt")
        assert violations == []
