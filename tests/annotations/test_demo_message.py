"""`make demo`'s message counts the simulated annotators' answers, not the demo annotators' own."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from annotations.demo import DEMO_SLUG, SIMULATED_ANNOTATORS
from annotations.models import Annotation, Project, Task
from tests.annotations.conftest import record_answers


@pytest.mark.django_db
def test_it_counts_only_the_simulated_annotators_answers() -> None:
    call_command("load_demo", stdout=StringIO())
    project = Project.objects.get(slug=DEMO_SLUG)
    simulated = Annotation.objects.filter(project=project).count()
    alice = User.objects.get(username="alice")
    record_answers(
        project, [(alice, task, 2) for task in Task.objects.filter(project=project).order_by("pk")[:3]]
    )
    out = StringIO()
    call_command("load_demo", stdout=out)
    counted = int(re.search(r"(\d+) answers from the simulated annotators", out.getvalue())[1])
    assert counted == simulated == Annotation.objects.filter(project=project).count() - 3
    names = {annotator.username for annotator in SIMULATED_ANNOTATORS}
    assert names == {"carol", "dave", "eve", "mallory"}
