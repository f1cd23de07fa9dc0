"""The session store's written-out read (evalplatform.sessions) against Django's own database backend."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.sessions.backends.db import SessionStore as DjangoStore
from django.contrib.sessions.models import Session
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from evalplatform.sessions import SessionStore

pytestmark = pytest.mark.django_db


def _saved(data: dict[str, object]) -> str:
    store = DjangoStore()
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
    assert queries[0]["sql"].startswith("SELECT session_data FROM django_session WHERE session_key")


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


def test_saves_and_flushes_as_djangos_backend() -> None:
    store = SessionStore()
    store["user"] = "u"
    store.save()
    key = store.session_key
    assert key is not None and SessionStore(key)["user"] == "u"
    store.flush()
    assert not Session.objects.filter(session_key=key).exists()


def test_beat_deletes_the_expired_sessions_daily() -> None:
    from django.conf import settings

    from evalplatform.tasks import sessions_clear_expired

    kept, gone = _saved({"a": 1}), _saved({"b": 2})
    Session.objects.filter(session_key=gone).update(expire_date=timezone.now() - timedelta(seconds=1))
    sessions_clear_expired()
    assert set(Session.objects.values_list("session_key", flat=True)) == {kept}
    entry = settings.CELERY_BEAT_SCHEDULE["sessions-clear-expired"]
    assert entry["task"] == sessions_clear_expired.name and entry["schedule"] == 86400.0
