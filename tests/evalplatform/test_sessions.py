"""The session store (evalplatform.sessions): its written-out read against Django's own database backend on
the same model, the signed-in user's column, the read that brings more with the session, and the
migration that moved Django's sessions into its table."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth.models import User
from django.contrib.sessions.backends import db
from django.contrib.sessions.models import Session as DjangoSession
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from evalplatform.models import Session
from evalplatform.sessions import SessionStore, signed_in_user_id

pytestmark = pytest.mark.django_db


class DjangoStore(db.SessionStore):
    """Django's own database backend, on this model."""

    __qualname__ = "SessionStore"  # the sessions' signing salt: Django's and ours sign alike

    @classmethod
    def get_model_class(cls) -> type[Any]:
        return Session


def _saved(data: dict[str, object], store_class: type[db.SessionStore] = DjangoStore) -> str:
    store = store_class()
    store.update(data)
    store.save()
    assert store.session_key is not None
    return store.session_key


def test_reads_what_djangos_backend_reads() -> None:
    key = _saved({"_auth_user_id": "7", "note": "ü", "n": [1, 2]})
    ours, theirs = SessionStore(key), DjangoStore(key)
    assert ours.load() == theirs.load() == {"_auth_user_id": "7", "note": "ü", "n": [1, 2]}
    assert ours.session_key == key


def test_one_statement_without_the_orm() -> None:
    key = _saved({"a": 1})
    with CaptureQueriesContext(connection) as queries:
        assert SessionStore(key)["a"] == 1
    assert len(queries) == 1
    assert queries[0]["sql"].startswith("SELECT session_data FROM evalplatform_session WHERE session_key")


def test_expired_and_unknown_keys_load_nothing_and_drop_the_key() -> None:
    key = _saved({"a": 1})
    Session.objects.filter(session_key=key).update(expire_date=timezone.now() - timedelta(seconds=1))
    for session_key in (key, "x" * 32):
        store = SessionStore(session_key)
        assert store.load() == {} == DjangoStore(session_key).load()
        assert store.session_key is None


def test_a_tampered_session_loads_nothing() -> None:
    key = _saved({"a": 1})
    Session.objects.filter(session_key=key).update(session_data="not-signed")
    assert SessionStore(key).load() == {} == DjangoStore(key).load()


def test_a_signed_in_sessions_data_is_checked_once_and_each_load_gets_its_own_dict(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = {"_auth_user_id": "7", "_auth_user_backend": "django.contrib.auth.backends.ModelBackend", "n": 3}
    key = _saved(data)
    decoded: list[str] = []
    real = SessionStore.decode
    monkeypatch.setattr(SessionStore, "decode", lambda self, raw: decoded.append(raw) or real(self, raw))
    first, second = SessionStore(key).load(), SessionStore(key).load()
    assert first == second == data == DjangoStore(key).load()
    assert len(decoded) == 1
    first["n"] = 4  # a session changed in one request changes nothing kept
    assert SessionStore(key).load() == data and len(decoded) == 1


def test_data_with_lists_and_bad_data_are_checked_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    listed, bad = _saved({"_auth_user_id": "7", "n": [1, 2]}), _saved({"a": 1})
    Session.objects.filter(session_key=bad).update(session_data="not-signed")
    decoded: list[str] = []
    real = SessionStore.decode
    monkeypatch.setattr(SessionStore, "decode", lambda self, raw: decoded.append(raw) or real(self, raw))
    for _ in range(2):
        loaded = SessionStore(listed).load()
        assert loaded == {"_auth_user_id": "7", "n": [1, 2]}
        loaded["n"].append(3)
        assert SessionStore(bad).load() == {}
    assert len(decoded) == 4


def test_a_rotated_secret_checks_the_kept_data_again(settings: Any) -> None:
    key = _saved({"_auth_user_id": "7"})
    assert SessionStore(key).load() == {"_auth_user_id": "7"}
    signed_with = settings.SECRET_KEY
    settings.SECRET_KEY = "another-secret-key-for-this-test-only"
    assert SessionStore(key).load() == {}  # signed with the old key, which is no longer among the keys
    settings.SECRET_KEY_FALLBACKS = [signed_with]
    assert SessionStore(key).load() == {"_auth_user_id": "7"}


def test_saves_and_flushes_as_djangos_backend() -> None:
    store = SessionStore()
    store["user"] = "u"
    store.save()
    key = store.session_key
    assert key is not None and SessionStore(key)["user"] == "u"
    store.flush()
    assert not Session.objects.filter(session_key=key).exists()


@pytest.mark.parametrize(
    ("data", "user_id"),
    [({"_auth_user_id": "7"}, 7), ({"_auth_user_id": 8}, 8), ({"a": 1}, None), ({"_auth_user_id": "x"}, None),
     ({"_auth_user_id": None}, None)],
)  # fmt: skip
def test_the_row_keeps_the_user_its_data_signs_in(data: dict[str, object], user_id: int | None) -> None:
    assert signed_in_user_id(data) == user_id
    key = _saved(data, SessionStore)
    assert Session.objects.get(session_key=key).user_id == user_id


def test_signing_in_and_out_through_the_site_keeps_the_column(alice: User) -> None:
    client = Client()
    client.force_login(alice)
    key = client.session.session_key
    assert Session.objects.get(session_key=key).user_id == alice.pk
    client.post("/accounts/logout/")
    assert not Session.objects.filter(session_key=key).exists()
    assert not Session.objects.filter(user_id=alice.pk).exists()


class TestLoadWith:
    """`load_with`: the session read by a statement that reads more with it."""

    def test_it_loads_the_session_and_returns_what_was_read_beside(self) -> None:
        key = _saved({"_auth_user_id": "7", "a": 1}, SessionStore)
        seen: list[tuple[str, Any]] = []

        def read(session_key: str, after: Any) -> tuple[str, str] | None:
            seen.append((session_key, after))
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT session_data, user_id FROM evalplatform_session "
                    "WHERE session_key = %s AND expire_date > %s",
                    [session_key, after],
                )
                row = cursor.fetchone()
            return (row[0], f"user {row[1]}") if row else None

        store = SessionStore(key)
        with CaptureQueriesContext(connection) as queries:
            assert store.load_with(read) == "user 7"
            assert store["a"] == 1 and store["_auth_user_id"] == "7"  # loaded: no second read
        assert len(queries) == 1 and [key for key, _ in seen] == [key]
        assert store.load_with(read) is None and len(seen) == 1  # loaded already: not read again

    def test_an_unknown_or_expired_session_loads_empty_and_drops_its_key(self) -> None:
        key = _saved({"a": 1})
        Session.objects.filter(session_key=key).update(expire_date=timezone.now() - timedelta(seconds=1))

        def read(session_key: str, after: Any) -> tuple[str, str] | None:
            row = Session.objects.filter(session_key=session_key, expire_date__gt=timezone.now()).first()
            return (row.session_data, "beside") if row else None

        store = SessionStore(key)
        assert store.load_with(read) is None
        assert store.session_key is None and dict(store.items()) == {}

    def test_a_session_without_a_key_reads_nothing(self) -> None:
        def read(session_key: str, after: Any) -> tuple[str, str] | None:
            raise AssertionError("read without a key")

        assert SessionStore().load_with(read) is None


def test_the_migration_moves_djangos_sessions_with_their_users() -> None:
    """0003 copies the unexpired sessions of Django's table with the user each signs in, so nobody is
    signed out by the upgrade; its reverse copies them back."""
    from importlib import import_module

    migration = import_module("evalplatform.migrations.0003_session")
    django_store = db.SessionStore  # Django's table
    signed_in, anonymous, expired = (_saved(data, django_store) for data in
                                     ({"_auth_user_id": "5"}, {"a": 1}, {"_auth_user_id": "6"}))  # fmt: skip
    DjangoSession.objects.filter(session_key=expired).update(expire_date=timezone.now() - timedelta(days=1))
    editor = SimpleNamespace(connection=connection)
    migration.copy_sessions(apps, editor)
    copied = dict(Session.objects.values_list("session_key", "user_id"))
    assert copied == {signed_in: 5, anonymous: None}
    assert SessionStore(signed_in)["_auth_user_id"] == "5"
    DjangoSession.objects.all().delete()
    migration.copy_sessions_back(apps, editor)
    assert set(DjangoSession.objects.values_list("session_key", flat=True)) == {signed_in, anonymous}


def test_beat_deletes_the_expired_sessions_daily() -> None:
    from django.conf import settings

    from evalplatform.tasks import sessions_clear_expired

    kept, gone = _saved({"a": 1}), _saved({"b": 2})
    Session.objects.filter(session_key=gone).update(expire_date=timezone.now() - timedelta(seconds=1))
    sessions_clear_expired()
    assert set(Session.objects.values_list("session_key", flat=True)) == {kept}
    entry = settings.CELERY_BEAT_SCHEDULE["sessions-clear-expired"]
    assert entry["task"] == sessions_clear_expired.name and entry["schedule"] == 86400.0


def test_the_admin_lists_who_is_signed_in_without_any_key(admin_client: Client, alice: User) -> None:
    client = Client()
    client.force_login(alice)
    key = client.session.session_key
    assert key is not None
    page = admin_client.get("/admin/evalplatform/session/")
    assert page.status_code == 200
    html = page.content.decode()
    assert f'<td class="field-user_id">{alice.pk}</td>' in html
    assert key not in html and "_selected_action" not in html
    assert admin_client.get(f"/admin/evalplatform/session/{key}/change/").status_code in (302, 403, 404)
