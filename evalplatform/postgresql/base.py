"""Django's PostgreSQL backend with a connection health check that needs no round trip to the server.

With persistent connections and `CONN_HEALTH_CHECKS`, Django checks a kept connection before a request
first uses it, by running `SELECT 1`: one more round trip on every request, about a tenth of a judging
request's time under load. A server that ended the connection (a restart, a failover, a terminated
backend) says so on the socket, with its goodbye message or the end of the stream, so an idle connection
whose socket has nothing to read is taken as usable without asking. When something did arrive, the
usual `SELECT 1` decides. A connection lost without a word (a dead network) fails its first statement
instead: that request answers 503 (`evalplatform.dbdown`) and the connection is dropped after it, as
with the plain check, whose `SELECT 1` would fail the same way.
"""

from __future__ import annotations

import select

from django.db.backends.postgresql import base


class DatabaseWrapper(base.DatabaseWrapper):
    def is_usable(self) -> bool:
        raw = self.connection
        if raw is None or raw.closed or raw.broken:
            return False
        try:
            socket = select.poll()
            socket.register(raw.fileno(), select.POLLIN | select.POLLERR | select.POLLHUP)
            unasked = socket.poll(0)
        except (OSError, ValueError):
            return False
        # Idle, with nothing sent to it since its last reply: nothing says the server went away.
        return True if not unasked else bool(super().is_usable())
