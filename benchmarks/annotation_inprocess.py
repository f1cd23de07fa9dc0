"""The judge page's answer against the load benchmark's floor in one process, without the HTTP server.

`annotation_load.py --mode page` measures the page's answers per second as a share of the floor's
requests per second with 50 clients, four gunicorn workers and the database on the same two cores, where
the machine's drift moves a run's share by several points. This diagnostic takes the server, the clients
and the concurrency out: one process calls Django's WSGI handler directly (no socket) with the page's own
request (`PageSession.answer`'s: the form's fields, the CSRF header and cookie, the session cookie) and
with the floor's (`POST /bench/floor/` with an API token), alternately, `--rounds` times, and reports each
one's Python CPU (this process) and database CPU (its backend, from /proc) per request, and their ratio:
what the share of the floor would be if only the application's own work counted.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/evalplatform_load \\
        python benchmarks/annotation_inprocess.py [--answers 2000] [--annotators 10] [--rounds 2] [--json]

It makes a project as the load benchmark does (20,000 tasks, 10% gold, overlap 3) and deletes it after.
"""

from __future__ import annotations

import argparse
import io
import json
import secrets
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent))
import annotation_load as load  # noqa: E402

HOST = "127.0.0.1:8000"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--answers", type=int, default=2000, help="requests of each kind per round")
    parser.add_argument("--annotators", type=int, default=10, help="signed-in annotators, answering in turn")
    parser.add_argument("--tasks", type=int, default=20000, help="the project's tasks")
    parser.add_argument("--rounds", type=int, default=2, help="page then floor, this many times")
    parser.add_argument("--json", action="store_true", help="print one JSON line instead of the table")
    return parser.parse_args()


def environ(path: str, body: bytes, headers: dict[str, str]) -> dict[str, Any]:
    """A WSGI POST as gunicorn would hand it to Django."""
    return {
        "REQUEST_METHOD": "POST", "PATH_INFO": path, "QUERY_STRING": "", "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000", "SERVER_PROTOCOL": "HTTP/1.1", "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body), "CONTENT_LENGTH": str(len(body)), "HTTP_HOST": HOST, **headers,
    }  # fmt: skip


def main() -> int:
    args = parse_args()
    load.django_setup()
    from django.contrib.auth.models import User
    from django.core.handlers.wsgi import WSGIHandler
    from django.db import connection
    from django.test import Client

    from benchmarks.load_urls import FLOOR_TABLE, FLOOR_TABLE_SQL

    run_id = "inproc-" + secrets.token_hex(4)
    slug, tokens = load.create_project(run_id, tasks=args.tasks, clients=args.annotators, overlap=3)
    with connection.cursor() as cursor:
        cursor.execute(FLOOR_TABLE_SQL)
    app = WSGIHandler()

    def call(env: dict[str, Any]) -> tuple[str, bytes]:
        reply: dict[str, str] = {}

        def start_response(status: str, headers: Iterable[Any], exc_info: Any = None) -> None:
            reply["status"] = status

        body = b"".join(app(env, start_response))
        return reply["status"], body

    # Each annotator signed in (a model-backend session, as the login page makes) with the judge page open.
    pages: list[dict[str, str]] = []
    for i in range(args.annotators):
        client = Client(enforce_csrf_checks=True)
        user = User.objects.get(username=f"{run_id}-a{i}")
        client.force_login(user, backend="django.contrib.auth.backends.ModelBackend")
        html = client.get(f"/projects/{slug}/judge/", HTTP_HOST=HOST).content.decode()
        url, token = load.ANSWER_NEXT.search(html), load.CSRF_FIELD.search(html)
        assert url and token, "the judge page has no task to answer"
        cookie = "; ".join(f"{key}={morsel.value}" for key, morsel in client.cookies.items())
        pages.append({"url": url.group(1), "token": token.group(1), "cookie": cookie})

    def page(n: int) -> None:
        for k in range(n):
            state = pages[k % len(pages)]
            body = urlencode({"csrfmiddlewaretoken": state["token"], "comment": "", "grade": k % 5}).encode()
            status, reply = call(environ(state["url"], body, {
                "CONTENT_TYPE": "application/x-www-form-urlencoded;charset=UTF-8", "HTTP_ACCEPT": "application/json",
                "HTTP_ORIGIN": f"http://{HOST}", "HTTP_X_CSRFTOKEN": state["token"], "HTTP_COOKIE": state["cookie"],
            }))  # fmt: skip
            assert status.startswith("200"), f"the page's answer: {status} {reply[:200]!r}"
            found = load.ANSWER_NEXT.search(json.loads(reply)["html"])
            assert found, "an annotator's queue ran out: use more --tasks"
            state["url"] = found.group(1)

    def floor(n: int) -> None:
        for k in range(n):
            status, _ = call(environ("/bench/floor/", b"{}", {
                "CONTENT_TYPE": "application/json", "HTTP_AUTHORIZATION": f"Token {tokens[k % len(tokens)]}",
            }))  # fmt: skip
            assert status.startswith("201"), f"the floor: {status}"

    def measure(loop: Callable[[int], None], n: int) -> dict[str, float]:
        backend = connection.connection.info.backend_pid  # type: ignore[union-attr]
        db, cpu, wall = load.process_cpu_seconds(backend), time.process_time(), time.perf_counter()
        loop(n)
        return {
            "python_ms": round(1000 * (time.process_time() - cpu) / n, 3),
            "db_ms": round(1000 * (load.process_cpu_seconds(backend) - db) / n, 3),
            "wall_ms": round(1000 * (time.perf_counter() - wall) / n, 3),
        }

    rounds: list[dict[str, Any]] = []
    try:
        page(min(200, args.answers))  # warm: the connection, the caches, the plans
        floor(min(200, args.answers))
        for _ in range(args.rounds):
            page_cost, floor_cost = measure(page, args.answers), measure(floor, args.answers)
            page_ms, floor_ms = (cost["python_ms"] + cost["db_ms"] for cost in (page_cost, floor_cost))
            ratio = page_ms / floor_ms
            rounds.append({"page": page_cost, "floor": floor_cost, "cpu_ratio": round(ratio, 2)})
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP TABLE IF EXISTS {FLOOR_TABLE}")
        load.delete_project(run_id)
    if args.json:
        print(json.dumps({"answers": args.answers, "annotators": args.annotators, "rounds": rounds}))
        return 0
    print("round  page: Python + db CPU ms  floor: Python + db CPU ms  page/floor CPU  share if CPU alone")
    for i, r in enumerate(rounds, 1):
        page_cost, floor_cost = r["page"], r["floor"]
        print(f"{i:5}  {page_cost['python_ms']:8.3f} + {page_cost['db_ms']:.3f}"
              f"             {floor_cost['python_ms']:8.3f} + {floor_cost['db_ms']:.3f}"
              f"              {r['cpu_ratio']:5.2f}           {100 / r['cpu_ratio']:.0f}%")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
