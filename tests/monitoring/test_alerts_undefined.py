"""A degenerate snapshot (two rows of zeros in 4-d, after a 200-row reference) has undefined collapse
metrics: stored as null, shown as "undefined", and left to each rule's `on_undefined`, through the API
and a real worker. It used to become NaN, resolve the open alert, and break the alert APIs with a 500."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from evalplatform.errors import InputError
from evalplatform.models import Team
from monitoring.alerts import services as alerts
from monitoring.models import AlertEvent, AlertRule, MonitorRun
from series.selectors import job_values
from tests.conftest import WorkerProcess
from tests.monitoring.test_alerts import monitor, rule
from tests.monitoring.test_streams import PARAMS
from tests.monitoring.test_streams_schedule import DONE_CHECK, DONE_RUN

TEAM_API = "/api/teams/search"
STREAM_API = f"{TEAM_API}/streams/tiny"


def strict_json(response: Any) -> Any:
    """The reply parsed as strict JSON: NaN and Infinity (which Python's json writes and reads) refused."""

    def refuse(constant: str) -> None:
        raise AssertionError(f"{response.request['PATH_INFO']} answered {constant} in its JSON")

    assert response.status_code == 200, (response.status_code, response.content[:500])
    return json.loads(response.content, parse_constant=refuse)


def wait_until(predicate: Callable[[], bool], *, timeout: float = 90.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def send_snapshot(editor: Client, vectors: np.ndarray, *, hours_ago: int, **fields: Any) -> int:
    observed = (timezone.now() - timedelta(hours=hours_ago)).isoformat()
    body = {"vectors": vectors.tolist(), "observed_at": observed, **fields}
    response = editor.post(f"{STREAM_API}/snapshots/", body, content_type="application/json")
    assert response.status_code == 201, response.json()
    return int(response.json()["id"])


def monitored(editor: Client, snapshot: int, worker: WorkerProcess) -> MonitorRun:
    """The snapshot's run, done by the worker, then its stream's alert check (the task its committed
    values queue), queued by `POST monitor/` (a reference's is queued by its upload)."""
    before, checks = len(DONE_RUN.findall(worker.log())), len(DONE_CHECK.findall(worker.log()))
    assert editor.post(f"{STREAM_API}/monitor/").status_code == 202
    assert wait_until(lambda: len(DONE_RUN.findall(worker.log())) > before), worker.log()[-5000:]
    assert wait_until(lambda: len(DONE_CHECK.findall(worker.log())) > checks), worker.log()[-5000:]
    return MonitorRun.objects.get(snapshot_id=snapshot, status="done")


def events_by_rule(client: Client) -> dict[str, dict[str, Any]]:
    return {event["rule_name"]: event for event in strict_json(client.get(f"{TEAM_API}/alerts/"))["results"]}


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_it_keeps_alerts_open_on_a_degenerate_snapshot_and_answers_json(
    celery_worker_process: WorkerProcess, theo: User, team: Team, client: Client
) -> None:
    client.force_login(theo)
    created = client.post(
        f"{TEAM_API}/streams/", {"slug": "tiny", "name": "Tiny", "dimension": 4, "params": PARAMS},
        content_type="application/json",
    )  # fmt: skip
    assert created.status_code == 201, created.json()
    for name, policy in (("rank_keep", None), ("rank_resolve", "resolve")):
        body = {"name": name, "metric": "effective_rank_ratio", "comparator": "<", "threshold": 0.5,
                "stream": "tiny", **({"on_undefined": policy} if policy else {})}  # fmt: skip
        made = client.post(f"{TEAM_API}/alert-rules/", body, content_type="application/json")
        assert made.status_code == 201, made.json()
        assert made.json()["on_undefined"] == (policy or "keep")
    rng = np.random.default_rng(0)
    before, checks = (
        len(DONE_RUN.findall(celery_worker_process.log())),
        len(DONE_CHECK.findall(celery_worker_process.log())),
    )
    reference = send_snapshot(client, rng.normal(size=(200, 4)), hours_ago=3, reference=True)
    assert wait_until(lambda: len(DONE_RUN.findall(celery_worker_process.log())) > before)
    assert wait_until(lambda: len(DONE_CHECK.findall(celery_worker_process.log())) > checks)
    assert MonitorRun.objects.get(snapshot_id=reference).status == "done"
    collapsed = rng.normal(size=(100, 1)) @ rng.normal(size=(1, 4)) + 0.001 * rng.normal(size=(100, 4))
    monitored(client, send_snapshot(client, collapsed, hours_ago=2), celery_worker_process)
    opened = events_by_rule(client)
    assert {"low_effective_rank", "rank_keep", "rank_resolve"} <= set(opened)
    assert all(
        opened[name]["status"] == "open" for name in ("low_effective_rank", "rank_keep", "rank_resolve")
    )

    zeros = monitored(client, send_snapshot(client, np.zeros((2, 4)), hours_ago=1), celery_worker_process)
    stored = {row.metric: row for row in job_values(zeros)}
    assert stored["effective_rank_ratio"].value is None  # undefined: NULL in the one table, never NaN

    after = events_by_rule(client)
    # The default collapse rule counts it as a collapse; a user rule keeps its event open; "resolve" resolves.
    assert (after["low_effective_rank"]["status"], after["low_effective_rank"]["observations"]) == ("open", 2)
    assert (after["rank_keep"]["status"], after["rank_keep"]["observations"]) == ("open", 1)
    assert after["rank_resolve"]["status"] == "resolved"
    for name in ("low_effective_rank", "rank_keep", "rank_resolve"):
        assert after[name]["latest_value"] is None and isinstance(after[name]["value"], float)
    stream_events = strict_json(client.get(f"{STREAM_API}/alerts/"))
    assert {event["rule_name"] for event in stream_events} >= {"low_effective_rank", "rank_keep"}
    series = strict_json(client.get(f"{STREAM_API}/series/"))
    [rank] = [s for s in series["metrics"] if s["metric"] == "effective_rank_ratio"]
    assert rank["points"][-1]["value"] is None
    run = strict_json(client.get(f"{STREAM_API}/runs/{zeros.pk}/"))
    assert run["values"]["effective_rank_ratio"]["value"] is None
    assert not AlertEvent.objects.filter(
        latest_value__in=[float("nan"), float("inf"), float("-inf")]
    ).exists()

    # The pages and the series CSV say "undefined".
    csv = client.get("/teams/search/streams/tiny/series.csv").content.decode().splitlines()
    header = csv[0].split(",")
    assert csv[-1].split(",")[header.index("effective_rank_ratio")] == "undefined"
    page = client.get("/teams/search/streams/tiny/").content.decode()
    assert "undefined" in page and "NaN" not in page and ">nan<" not in page
    for path in ("/teams/search/alerts/", "/"):  # the team's alerts, and the open alerts on the home page
        assert "undefined" in client.get(path).content.decode()


@pytest.mark.django_db
class TestOnUndefined:
    """The three policies on an in-process series (`tests.monitoring.test_alerts.monitor` stores None)."""

    @pytest.mark.parametrize(
        ("policy", "expected"),
        [("keep", [("open", 1)]), ("fire", [("open", 2)]), ("resolve", [("resolved", 1)])],
    )
    def test_it_follows_the_rules_policy_on_an_open_event(
        self, stream: Any, policy: str, expected: Any
    ) -> None:
        watched = rule(stream, on_undefined=policy)
        monitor(stream, 0, avg_cosine_similarity=0.5)
        monitor(stream, 1, avg_cosine_similarity=None)  # type: ignore[arg-type]
        event = AlertEvent.objects.get(rule=watched)
        assert [(event.status, event.observations)] == expected and event.latest_value is None

    def test_it_opens_on_undefined_only_when_the_rule_fires_on_it(self, stream: Any) -> None:
        keep = rule(stream, name="keep")
        fire = rule(stream, name="fire", on_undefined="fire")
        monitor(stream, 0, avg_cosine_similarity=None)  # type: ignore[arg-type]
        assert not AlertEvent.objects.filter(rule=keep).exists()
        opened = AlertEvent.objects.get(rule=fire)
        assert (opened.status, opened.value, opened.latest_value) == ("open", None, None)

    def test_it_refuses_an_unknown_policy(self, stream: Any, theo: User, client: Client) -> None:
        with pytest.raises(InputError, match="on_undefined"):
            rule(stream, on_undefined="shrug")
        client.force_login(theo)
        body = {"name": "r", "metric": "avg_cosine_similarity", "comparator": ">", "threshold": 0.3,
                "stream": "docs", "on_undefined": "shrug"}  # fmt: skip
        refused = client.post(f"{TEAM_API}/alert-rules/", body, content_type="application/json")
        assert refused.status_code == 400 and "on_undefined" in refused.json()

    def test_it_takes_the_policy_from_the_alerts_page_form(
        self, stream: Any, theo: User, client: Client
    ) -> None:
        client.force_login(theo)
        form = {"name": "collapse", "metric": "effective_rank_ratio", "comparator": "<", "threshold": "0.3",
                "severity": "critical", "consecutive": "1", "cooldown_minutes": "30", "stream": stream.pk}  # fmt: skip
        assert client.post("/teams/search/alerts/rules/", {**form, "on_undefined": "fire"}).status_code == 302
        assert client.post("/teams/search/alerts/rules/", {**form, "name": "plain"}).status_code == 302
        policies = dict(AlertRule.objects.values_list("name", "on_undefined"))
        assert policies == {"collapse": "fire", "plain": "keep"}
        page = client.get("/teams/search/alerts/").content.decode()
        assert 'name="on_undefined"' in page and "if undefined: fire" in page

    def test_it_puts_the_collapse_rules_on_a_stream_firing_on_undefined(self, stream: Any) -> None:
        made = {made.name: made.on_undefined for made in alerts.default_stream_rules(stream=stream)}
        assert made == {
            "high_avg_cosine": "fire", "low_effective_dim": "fire", "top10_variance_dominates": "fire",
            "dead_dimensions": "fire", "low_effective_rank": "fire", "mmd_drift": "keep",
            "domain_classifier_drift": "keep",
        }  # fmt: skip


@pytest.fixture
def stream(team: Team) -> Any:
    from monitoring.models import EmbeddingStream

    return EmbeddingStream.objects.create(team=team, slug="docs", name="Doc embeddings", dimension=8)
