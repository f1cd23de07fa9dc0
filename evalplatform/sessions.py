"""Django's database sessions, read by one prepared statement instead of an ORM query.

Every signed-in page request reads its session. Through the ORM (`Session.objects.get(...)`) that read was
a fifth of the judge page's answer in Python (building, filtering and compiling a queryset, then a model
instance), measured with py-spy on the annotation load benchmark's page mode. Here it is the same
statement written out (`session_key = %s AND expire_date > now`), through `sqlrows.cursor` (bound on the
server in PostgreSQL, so prepared after a few runs). Everything else (saving, creating, flushing, expiry,
`clearsessions`) is Django's own `db` backend, with the same table and model.
"""

from __future__ import annotations

from typing import Any

from django.contrib.sessions.backends import db
from django.db import DEFAULT_DB_ALIAS, router
from django.utils import timezone

from evalplatform import sqlrows


class SessionStore(db.SessionStore):
    """`django.contrib.sessions.backends.db.SessionStore` whose load is one written-out statement."""

    def load(self) -> dict[str, Any]:
        model = self.model
        if router.db_for_read(model) != DEFAULT_DB_ALIAS or sqlrows.vendor() != "postgresql":
            return super().load()  # the ORM's conversions (SQLite keeps datetimes as text)
        with sqlrows.cursor() as cursor:
            cursor.execute(
                f"SELECT session_data FROM {model._meta.db_table} WHERE session_key = %s AND expire_date > %s",
                [self.session_key, timezone.now()],
            )
            row = cursor.fetchone()
        if row is None:
            self._session_key = None  # as Django's: an unknown or expired key is dropped
            return {}
        return self.decode(row[0])


__all__ = ["SessionStore"]
