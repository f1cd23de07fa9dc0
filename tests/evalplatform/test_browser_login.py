"""A real headless Chromium logs in through the login page and sees the home page."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User

from tests.conftest import LENA

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
class TestBrowserLogin:
    def test_it_logs_in_through_the_real_login_page(self, page, live_server, lena: User) -> None:  # type: ignore[no-untyped-def]
        page.goto(f"{live_server.url}/")
        assert page.url.endswith("/accounts/login/?next=/")
        page.get_by_label("Username").fill(LENA.username)
        page.get_by_label("Password").fill(LENA.password)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(f"{live_server.url}/")
        assert page.get_by_role("heading", level=1).inner_text() == "Welcome, lena"
        assert page.get_by_text("Project lead").is_visible()
        stylesheet_color = page.evaluate(
            "getComputedStyle(document.querySelector('.site-header')).backgroundColor"
        )
        assert stylesheet_color == "rgb(29, 35, 48)", "the whitenoise-served stylesheet did not load"

    def test_it_shows_an_error_for_a_wrong_password(self, page, live_server, lena: User) -> None:  # type: ignore[no-untyped-def]
        page.goto(f"{live_server.url}/accounts/login/")
        page.get_by_label("Username").fill(LENA.username)
        page.get_by_label("Password").fill("not-the-password")
        page.get_by_role("button", name="Log in").click()
        assert page.get_by_role("alert").inner_text().startswith("Your username and password didn't match")

    def test_it_logs_out(self, page, live_server, lena: User) -> None:  # type: ignore[no-untyped-def]
        page.goto(f"{live_server.url}/accounts/login/")
        page.get_by_label("Username").fill(LENA.username)
        page.get_by_label("Password").fill(LENA.password)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(f"{live_server.url}/")
        page.get_by_role("button", name="Log out").click()
        page.wait_for_url(f"{live_server.url}/accounts/login/")
