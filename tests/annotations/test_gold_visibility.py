"""Gold stays hidden from annotators and is shown to leads where it matters: no document id (such as an
attention check's) in anything an annotator reads; a lead adjudicating a gold pair sees its gold grade;
a qrels build reports every pair whose exported grade differs from its gold grade."""

from __future__ import annotations

import json
import re
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from annotations import qrels
from annotations.adjudication import services as adjudication
from annotations.demo import DEMO_LEAD, demo_annotations_simulate, demo_project_create
from annotations.models import Annotation, Document, GoldLabel, Project, QrelsBuild, Task
from portal.demo import demo_accounts_create
from tests.annotations.conftest import build_project


def logged_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def post_json(client: Client, path: str, body: dict[str, Any] | None = None) -> Any:
    return client.post(path, json.dumps(body or {}), content_type="application/json")


@pytest.mark.django_db
class TestAnnotatorsSeeNoDocumentIds:
    def test_it_keeps_every_doc_id_out_of_the_replies_and_the_history(self, lena: User, alice: User) -> None:
        project = build_project(lead=lena, annotators=[alice], topics=2, docs_per_topic=4, gold_per_topic=2)
        client, api = logged_in(alice), f"/api/projects/{project.slug}"
        seen = [client.get(f"/projects/{project.slug}/judge/").content.decode()]
        reply = post_json(client, f"{api}/next/")
        seen.append(reply.content.decode())
        while reply.json().get("status", reply.json().get("next", {}).get("status")) != "empty":
            task = reply.json().get("task") or reply.json()["next"]["task"]
            if task is None:
                break
            reply = post_json(
                client, f"{api}/submit/", {"assignment": task["assignment"], "grade": 1, "next": True}
            )
            seen += [reply.content.decode(), client.get(f"/projects/{project.slug}/judge/").content.decode()]
            reply = reply if reply.json().get("next") else post_json(client, f"{api}/next/")
        seen.append(client.get(f"{api}/progress/").content.decode())
        seen.append(post_json(client, f"{api}/undo/").content.decode())
        history = client.get(f"/projects/{project.slug}/judge/history/").content.decode()
        seen.append(history)
        answered = Annotation.objects.filter(project=project, annotator=alice).count()
        assert answered >= 4 and history.count("<tr data-answer") == answered
        doc_ids = list(Document.objects.filter(project=project).values_list("doc_id", flat=True))
        assert len(doc_ids) == 8
        for text in seen:
            assert [doc_id for doc_id in doc_ids if doc_id in text] == []
        # The documents are told apart by their titles and an opaque reference, the same on every visit.
        titles = Document.objects.filter(project=project).values_list("title", flat=True)
        assert sum(title in history for title in titles) == answered
        again = client.get(f"/projects/{project.slug}/judge/history/").content.decode()
        references = re.findall(r'data-ref="([0-9a-f]+)"', history)
        assert len(set(references)) == answered and references == re.findall(r'data-ref="([0-9a-f]+)"', again)

    def test_the_demos_attention_check_has_an_id_like_any_other_document(self) -> None:
        demo_accounts_create()
        project = demo_project_create()
        check = Task.objects.select_related("document").get(project=project, attention_check__isnull=False)
        doc_id = check.document.doc_id
        assert not re.search(r"attention|check|gold|trap", doc_id, re.I)
        others = Document.objects.filter(project=project).exclude(pk=check.document_id)
        assert re.fullmatch(r"[a-z]+(-[a-z]+)*", doc_id) and not others.filter(doc_id=doc_id).exists()
        assert others.filter(doc_id__regex=r"^[a-z]+(-[a-z]+)+$").exists()  # hyphened ids are common there


@pytest.fixture
def demo(db: None) -> Project:
    demo_accounts_create()
    project = demo_project_create()
    demo_annotations_simulate(project)
    return project


def q03_with(project: Project) -> Task:
    return Task.objects.select_related("topic", "document").get(
        project=project, topic__qid="q03", document__doc_id="with"
    )


@pytest.mark.django_db
class TestGoldInAdjudication:
    def test_a_lead_sees_that_a_waiting_pair_is_gold_and_its_grade(self, demo: Project) -> None:
        pair = q03_with(demo)
        gold = GoldLabel.objects.get(task=pair).grade
        assert pair.is_gold and gold == 4
        assert pair.pk in [p.task.pk for p in adjudication.adjudication_queue(project=demo).waiting]
        lena = logged_in(User.objects.get(username=DEMO_LEAD))
        queue = lena.get(f"/api/projects/{demo.slug}/adjudication/").json()
        waiting = {p["task"]: p for p in queue["waiting"]}
        assert waiting[pair.pk]["gold"] == 4
        assert all(p["gold"] is None for task, p in waiting.items() if not Task.objects.get(pk=task).is_gold)
        page = lena.get(f"/projects/{demo.slug}/adjudication/").content.decode()
        row = re.search(rf"<tr[^>]*>(?:(?!</tr>).)*adjudication/{pair.pk}/(?:(?!</tr>).)*</tr>", page, re.S)
        assert row and 'class="gold-marker"' in row[0] and "gold: 4" in row[0]
        one = lena.get(f"/projects/{demo.slug}/adjudication/{pair.pk}/").content.decode()
        assert re.search(r'id="gold-grade"[^>]*>gold: 4<', one)

    def test_an_annotator_who_adjudicates_is_not_told_which_pairs_are_gold(self, demo: Project) -> None:
        pair = q03_with(demo)
        alice = User.objects.get(username="alice")
        adjudication.adjudicator_allow(project=demo, user_id=alice.pk, allowed=True)
        client = logged_in(alice)
        queue = client.get(f"/api/projects/{demo.slug}/adjudication/").json()
        assert all(p["gold"] is None for p in queue["waiting"] + queue["done"])
        one = client.get(f"/projects/{demo.slug}/adjudication/{pair.pk}/").content.decode()
        assert "gold-grade" not in one and "gold: " not in one


@pytest.mark.django_db
class TestBuildsReportGold:
    def test_a_build_reports_an_adjudicated_gold_pair_that_differs_from_gold(self, demo: Project) -> None:
        pair = q03_with(demo)
        lena = User.objects.get(username=DEMO_LEAD)
        adjudication.adjudication_set(project=demo, task=pair, grade=3, note="", adjudicator=lena)
        out = StringIO()
        call_command("build_qrels", demo.slug, "--sync", stdout=out)
        build = QrelsBuild.objects.get(project=demo)
        mismatches = build.counts["gold_mismatches"]
        assert {"qid": "q03", "doc_id": "with", "gold": 4, "rel": 3, "source": "adjudication"} in mismatches
        exported = {(j.qid, j.doc_id): j.rel for j in qrels.build_judgments(build)}
        gold = {
            (g.task.topic.qid, g.task.document.doc_id): g.grade
            for g in GoldLabel.objects.filter(task__project=demo).select_related(
                "task__topic", "task__document"
            )
        }
        expected = sorted(
            (q, d) for (q, d), grade in gold.items() if (q, d) in exported and exported[(q, d)] != grade
        )
        assert sorted((m["qid"], m["doc_id"]) for m in mismatches) == expected
        assert all(m["rel"] == exported[(m["qid"], m["doc_id"])] for m in mismatches)
        text = out.getvalue()
        n = len(mismatches)
        assert (f"{n} pairs differ from gold:" if n > 1 else "1 pair differs from gold:") in text
        assert "q03/with: gold 4, exported 3 (adjudication)" in text
        client = logged_in(lena)
        api = client.get(f"/api/projects/{demo.slug}/qrels/{build.version}/").json()
        assert api["counts"]["gold_mismatches"] == mismatches
        page = client.get(f"/projects/{demo.slug}/quality/").content.decode()
        row = page[page.index('id="build-table"') :]
        assert "q03/with: gold 4, exported 3" in row and f"{len(mismatches)} differ from gold" in row
