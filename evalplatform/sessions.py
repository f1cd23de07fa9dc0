"""Django's database sessions in a table that keeps the signed-in user's id (`evalplatform.models.Session`),
read by one prepared statement instead of an ORM query, or together with the user (`load_with`).

Every signed-in page request reads its session, then its user. Through the ORM (`Session.objects.get(...)`)
the session's read was a fifth of the judge page's answer in Python (building, filtering and compiling a
queryset, then a model instance), measured with py-spy on the annotation load benchmark's page mode. Here
it is the same statement written out (`session_key = %s AND expire_date > now`), through `sqlrows.cursor`
(bound on the server in PostgreSQL, so prepared after a few runs). With the user's id in a column of the
session's row, a request that needs both reads them in one round trip (`load_with`). Everything else
(saving, creating, flushing, expiry, `clearsessions`) is Django's own `db` backend on this model.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from django.conf import settings
from django.contrib.auth import SESSION_KEY
from django.contrib.sessions.backends import db
from django.db import DEFAULT_DB_ALIAS, connections, router
from django.utils import timezone

from evalplatform import sqlrows

T = TypeVar("T")

#: What `load_with`'s reader is given: the session's key and the time its expiry is compared with, in the
#: database's own form (`unexpired_after`); what it returns: the session's data and what it read beside.
SessionReader = Callable[[str, Any], "tuple[str, T] | None"]


def signed_in_user_id(data: dict[str, Any]) -> int | None:
    """The id of the user a session's data signs in (Django's `_auth_user_id`), or None."""
    try:
        return int(data[SESSION_KEY])
    except (KeyError, TypeError, ValueError):
        return None


def unexpired_after(now: datetime | None = None) -> Any:
    """`now` as the database compares it with a session's `expire_date` in a written-out statement (SQLite
    keeps datetimes as text, in the form the ORM writes)."""
    return connections[DEFAULT_DB_ALIAS].ops.adapt_datetimefield_value(now or timezone.now())


#: The values a decoded session may hold to be kept (`SessionStore.decode_kept`): none changes in place.
_SCALARS = (str, int, float, bool, type(None))
#: Decoded sessions' items by store class, signed data, serializer and the keys the signature was checked
#: with; the oldest dropped past `_KEPT_MAX`.
_KEPT: dict[tuple[Any, ...], tuple[tuple[str, Any], ...]] = {}
_KEPT_MAX = 8192
_KEPT_LOCK = threading.Lock()


class SessionStore(db.SessionStore):
    """`django.contrib.sessions.backends.db.SessionStore` on `evalplatform.models.Session`, whose load is
    one written-out statement, or one that reads more with it (`load_with`)."""

    @classmethod
    def get_model_class(cls) -> type[Any]:
        from evalplatform.models import Session

        return Session

    def create_model_instance(self, data: dict[str, Any]) -> Any:
        instance: Any = super().create_model_instance(data)
        instance.user_id = signed_in_user_id(data)
        return instance

    async def acreate_model_instance(self, data: dict[str, Any]) -> Any:
        instance: Any = await super().acreate_model_instance(data)
        instance.user_id = signed_in_user_id(data)
        return instance

    def load(self) -> dict[str, Any]:
        model = self.model
        if router.db_for_read(model) != DEFAULT_DB_ALIAS:
            return super().load()  # type: ignore[no-any-return]
        with sqlrows.cursor() as cursor:
            cursor.execute(
                f"SELECT session_data FROM {model._meta.db_table} WHERE session_key = %s AND expire_date > %s",
                [self.session_key, unexpired_after()],
            )
            row = cursor.fetchone()
        return self._loaded(row[0] if row is not None else None)

    def load_with(self, read: SessionReader[T]) -> T | None:
        """Load the session from the row `read(key, unexpired_after())` returns, with what it read beside
        (its user, say, joined on the session's `user_id`), which is returned. `read` reads the row of
        this session's key whose `expire_date` is later than the time given, as `load` does, or returns
        None. None, loading nothing, where the session is loaded already or has no key; None where no
        such session is found, which then loads as empty, as `load` would."""
        if hasattr(self, "_session_cache") or self.session_key is None:
            return None
        if router.db_for_read(self.model) != DEFAULT_DB_ALIAS:
            return None
        found = read(self.session_key, unexpired_after())
        self._session_cache = self._loaded(found[0] if found is not None else None)
        return found[1] if found is not None else None

    def _loaded(self, session_data: str | None) -> dict[str, Any]:
        if session_data is None:
            self._session_key = None  # as Django's: an unknown or expired key is dropped
            return {}
        return self.decode_kept(session_data)

    def decode_kept(self, session_data: str) -> dict[str, Any]:
        """`decode(session_data)`, its signature checked once per process for the same data, serializer and
        keys: a signed-in session's data stays the same from request to request, and checking it (a key
        derived and an HMAC, base64 and JSON) was a fortieth of the judge page's answer in Python (py-spy,
        the load benchmark's page mode). Only data of scalars is kept (the sign-in's ids and hash), and a
        new dict is returned each time, so that changing the session changes nothing kept. Data that
        does not verify is never kept: it decodes (and is logged) as Django's `decode`, each time."""
        key = (type(self), session_data, settings.SESSION_SERIALIZER, settings.SECRET_KEY,
               *getattr(settings, "SECRET_KEY_FALLBACKS", ()))  # fmt: skip
        items = _KEPT.get(key)
        if items is not None:
            return dict(items)
        data: dict[str, Any] = self.decode(session_data)
        if data and all(isinstance(value, _SCALARS) for value in data.values()):
            with _KEPT_LOCK:
                if len(_KEPT) >= _KEPT_MAX:
                    del _KEPT[next(iter(_KEPT))]
                _KEPT[key] = tuple(data.items())
        return data


__all__ = ["SessionReader", "SessionStore", "signed_in_user_id", "unexpired_after"]
