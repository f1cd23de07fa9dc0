"""Judging on SQLite, the embedded default of `make demo`: the claim and answer statements
(`annotations.hotpath`) have a SQLite spelling, run here in a process of its own on a fresh SQLite file
(with DEBUG on, so that Django also formats every statement for its query log)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import json, os
from datetime import timedelta
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone
from annotations import services
from annotations.models import Assignment, Document, ProjectMembership, Task, Topic

lead, alice, bob = (User.objects.create_user(name) for name in ("lena", "alice", "bob"))
project = services.project_create(creator=lead, slug="lite", name="Lite", overlap=2, min_seconds_per_task=0)
for person in (alice, bob):
    services.membership_set(project=project, user=person, role=ProjectMembership.Role.ANNOTATOR)
topic = Topic.objects.create(project=project, qid="q1", title="query one")
for i in range(6):
    document = Document.objects.create(project=project, doc_id=f"d{i}", title=f"Doc {i}", text="Text.")
    Task.objects.create(project=project, topic=topic, document=document, is_gold=i == 0)
client = Client()
client.force_login(alice)
base = "/api/projects/lite"
out = {"claimed": [], "progress": []}
held = client.post(f"{base}/next/", content_type="application/json").json()["task"]["assignment"]
while held is not None:
    out["claimed"].append(held)
    reply = client.post(f"{base}/submit/", {"assignment": held, "grade": 2, "next": True},
                        content_type="application/json").json()
    out["progress"].append(reply["next"]["progress"]["done"])
    held = reply["next"]["task"]["assignment"] if reply["next"]["status"] == "task" else None
# bob is served the tasks alice started (the started stage, in bob's own shuffled order). An expired
# reservation whose place is still free may still be answered, its seconds counted on the server clock.
claim = services.task_claim(project=project, annotator=bob)
hour = timezone.now() - timedelta(hours=1)
Assignment.objects.filter(pk=claim.assignment.pk).update(reserved_at=hour - timedelta(hours=1), expires_at=hour)
answer = services.annotation_submit(project=project, annotator=bob, assignment_id=claim.assignment.pk, grade=1)
out["bob_seconds"] = answer.seconds_spent
served = {claim.assignment.task_id}
while (claim := services.task_claim(project=project, annotator=bob)).status == "task":
    served.add(claim.assignment.task_id)
    services.annotation_submit(project=project, annotator=bob, assignment_id=claim.assignment.pk, grade=3)
out["bob_served"] = len(served)
out["labels"] = sorted(Task.objects.filter(project=project).values_list("label_count", flat=True))
# A gold import marks answered tasks gold in batches (one task each here).
from pathlib import Path
from annotations import imports
imports.BATCH_SIZE = 1
qrels = Path(os.environ["EVALPLATFORM_VAR_DIR"]) / "gold.qrels"
qrels.write_text("q1 0 d1 3\nq1 0 d2 2\n")
out["gold_labels"] = imports.gold_import(project=project, path=qrels).created
out["gold"] = sorted(Task.objects.filter(project=project, is_gold=True).values_list("document__doc_id", flat=True))
print(json.dumps(out))
"""


def test_a_queue_is_claimed_and_answered_on_sqlite(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "evalplatform.settings",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'lite.sqlite3'}",
        "CELERY_BROKER_URL": "memory://",
        "DEBUG": "true",
        "ALLOWED_HOSTS": "testserver",
        "EVALPLATFORM_VAR_DIR": str(tmp_path),
    }
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(out["claimed"]) == len(set(out["claimed"])) >= 5  # every ordinary task, and gold as planned
    assert out["progress"] == list(range(1, len(out["claimed"]) + 1))
    assert 7199 < out["bob_seconds"] < 7300
    assert out["bob_served"] == len(out["claimed"])  # overlap 2: bob judges what alice judged
    assert out["labels"] == [2] * len(out["labels"]) and len(out["labels"]) == 6
    assert out["gold_labels"] == 2 and out["gold"] == ["d0", "d1", "d2"]
