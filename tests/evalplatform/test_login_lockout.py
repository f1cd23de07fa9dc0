"""Password logins are rate-limited (django-axes, `evalplatform.lockout`): the probe had 200 wrong passwords
in 39 s all answered. An account from one address is locked after LOGIN_FAILURE_LIMIT failures, an account
from every address and an address over every account after their own, higher limits, for a cool-off;
admins unlock in the Django admin or with the axes_reset commands."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from axes.models import AccessAttempt
from django.contrib.auth.models import User
from django.core.management import call_command
from django.http import HttpResponse
from django.test import Client, RequestFactory
from django.utils import timezone

from evalplatform.lockout import client_address
from tests.conftest import ALICE, LENA, make_user

LOGIN = "/accounts/login/"
LIMIT = 10  # LOGIN_FAILURE_LIMIT's default


def attempt(client: Client, password: str, username: str = LENA.username, url: str = LOGIN) -> HttpResponse:
    return client.post(url, {"username": username, "password": password})


def fail(client: Client, times: int, username: str = LENA.username, url: str = LOGIN) -> None:
    for _ in range(times):
        response = attempt(client, "not-the-password", username, url)
        assert response.status_code == 200, "locked out before the limit"


def lock_out(client: Client, username: str = LENA.username) -> None:
    fail(client, LIMIT - 1, username)
    assert attempt(client, "not-the-password", username).status_code == 429


def signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


@pytest.fixture
def small_limits(settings: Any) -> None:
    """Lower wide limits, so a test needs few (slow, hashed) password checks: 3 per account and address, 5
    per account or per address."""
    settings.LOGIN_FAILURE_LIMIT = settings.AXES_FAILURE_LIMIT = 3
    settings.LOGIN_ACCOUNT_FAILURE_LIMIT = settings.LOGIN_ADDRESS_FAILURE_LIMIT = 5


@pytest.mark.django_db
class TestLoginLockout:
    def test_it_locks_an_account_from_one_address_after_the_limit(self, client: Client, lena: User) -> None:
        fail(client, LIMIT - 1)
        locked = attempt(client, "not-the-password")
        assert locked.status_code == 429
        page = locked.content.decode()
        assert "Too many failed logins" in page and "Try again in 15 minutes" in page
        assert "Traceback" not in page
        assert locked["Retry-After"] == str(15 * 60)
        assert "Content-Security-Policy" in locked

    def test_it_refuses_even_the_right_password_while_locked(self, client: Client, lena: User) -> None:
        lock_out(client)
        assert attempt(client, LENA.password).status_code == 429
        assert not signed_in(client)

    def test_it_lets_the_right_password_in_under_the_limit_and_still_counts_the_failures(
        self, client: Client, lena: User
    ) -> None:
        fail(client, 3)
        assert attempt(client, LENA.password).status_code == 302
        assert signed_in(client)
        client.logout()
        # The success reset nothing: three failures plus seven more reach the limit.
        fail(client, LIMIT - 4)
        assert attempt(client, "not-the-password").status_code == 429

    def test_it_still_lets_the_account_in_from_another_address(self, client: Client, lena: User) -> None:
        lock_out(client)
        elsewhere = Client(REMOTE_ADDR="192.0.2.7")
        assert attempt(elsewhere, LENA.password).status_code == 302
        assert signed_in(elsewhere)

    def test_it_locks_the_admin_login_too(self, client: Client, lena: User) -> None:
        lena.is_staff = True
        lena.save(update_fields=["is_staff"])
        fail(client, LIMIT - 1, url="/admin/login/")
        assert attempt(client, "not-the-password", url="/admin/login/").status_code == 429
        assert attempt(client, LENA.password, url="/admin/login/").status_code == 429
        assert attempt(client, LENA.password).status_code == 429  # the same count as the login page

    def test_it_ignores_a_forged_x_forwarded_for(self, client: Client, lena: User) -> None:
        for n in range(LIMIT):
            client.post(
                LOGIN,
                {"username": LENA.username, "password": "no"},
                headers={"X-Forwarded-For": f"198.51.100.{n}"},
            )
        assert attempt(client, LENA.password).status_code == 429

    def test_it_forgets_the_failures_after_the_cool_off(self, client: Client, lena: User) -> None:
        lock_out(client)
        AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=16))
        assert attempt(client, LENA.password).status_code == 302


@pytest.mark.django_db
class TestWideLimits:
    def test_it_locks_an_address_that_tries_many_accounts(self, client: Client, small_limits: None) -> None:
        fail(client, 2, username="alice")
        fail(client, 2, username="bob")
        assert attempt(client, "no", username="carol").status_code == 429
        make_user(ALICE)
        assert attempt(client, ALICE.password, username="alice").status_code == 429

    def test_it_locks_an_account_tried_from_many_addresses(self, lena: User, small_limits: None) -> None:
        for address in ["192.0.2.1", "192.0.2.2"]:
            fail(Client(REMOTE_ADDR=address), 2)
        assert attempt(Client(REMOTE_ADDR="192.0.2.3"), "no").status_code == 429
        assert attempt(Client(REMOTE_ADDR="192.0.2.4"), LENA.password).status_code == 429

    def test_it_can_turn_the_wide_limits_off(self, settings: Any, small_limits: None, lena: User) -> None:
        settings.LOGIN_ACCOUNT_FAILURE_LIMIT = settings.LOGIN_ADDRESS_FAILURE_LIMIT = 0
        for address in ["192.0.2.1", "192.0.2.2", "192.0.2.3"]:
            fail(Client(REMOTE_ADDR=address), 2)
        assert attempt(Client(REMOTE_ADDR="192.0.2.4"), LENA.password).status_code == 302


@pytest.mark.django_db
class TestUnlock:
    def test_it_unlocks_with_axes_reset_username(self, client: Client, lena: User) -> None:
        lock_out(client)
        call_command("axes_reset_username", LENA.username)
        assert attempt(client, LENA.password).status_code == 302

    def test_it_lets_an_admin_delete_the_attempts_in_the_django_admin(
        self, client: Client, lena: User
    ) -> None:
        lock_out(client)
        admin = Client(REMOTE_ADDR="192.0.2.9")
        admin.force_login(User.objects.create_superuser("root", "root@example.org", "root-password-123"))
        listing = admin.get("/admin/axes/accessattempt/")
        assert listing.status_code == 200 and LENA.username in listing.content.decode()
        attempts = list(AccessAttempt.objects.values_list("pk", flat=True))
        admin.post(
            "/admin/axes/accessattempt/",
            {"action": "delete_selected", "_selected_action": attempts, "post": "yes"},
        )
        assert not AccessAttempt.objects.exists()
        assert attempt(client, LENA.password).status_code == 302


class TestClientAddress:
    def test_it_takes_remote_addr_unless_proxies_are_configured(self, settings: Any) -> None:
        request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.5", HTTP_X_FORWARDED_FOR="203.0.113.9")
        settings.TRUSTED_PROXY_COUNT = 0
        assert client_address(request) == "10.0.0.5"

    def test_it_takes_the_address_the_trusted_proxies_saw(self, settings: Any) -> None:
        forwarded = "6.6.6.6, 203.0.113.9, 10.0.0.4"  # forged by the client, the client, the first proxy
        request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.5", HTTP_X_FORWARDED_FOR=forwarded)
        settings.TRUSTED_PROXY_COUNT = 2
        assert client_address(request) == "203.0.113.9"
        settings.TRUSTED_PROXY_COUNT = 4  # more proxies than entries: the header cannot be trusted
        assert client_address(request) == "10.0.0.5"
