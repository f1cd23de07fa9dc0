"""A quality recompute writes its scalars into the one metric table: the project's agreement (with its
CIs) and gold figures in the project's series, each annotator's accuracy, speed and label shares in the
annotator's series; a series' history then holds one point per recompute."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from annotations.models import Project, QualityRecompute, QualitySnapshot
from annotations.quality import services as quality
from evalplatform.models import Team
from series.models import MetricValue, Series
from series.selectors import job_values, series_history
from tests.annotations.conftest import build_project
from tests.annotations.test_quality import answer_gold

pytestmark = pytest.mark.django_db


@pytest.fixture
def people(annotators: Any) -> list[User]:
    return annotators(4)


@pytest.fixture
def project(lena: User, people: list[User]) -> Project:
    """Two topics of ten documents; the first five of each are gold (grade 3): ten gold tasks."""
    return build_project(lead=lena, annotators=people, topics=2, docs_per_topic=10, gold_per_topic=5)


def test_it_writes_the_projects_and_each_annotators_figures_as_metric_values(
    project: Project,
    people: list[User],
) -> None:
    team = Team.objects.create(slug="search", name="Search")
    Project.objects.filter(pk=project.pk).update(team=team)
    answer_gold(project, people)
    assert quality.quality_snapshot_refresh(project_id=project.pk) == "done"
    snapshot = QualitySnapshot.objects.get(project=project)
    job = QualityRecompute.objects.get(project=project)
    values = {(v.series.kind, v.series.name, v.metric, v.subgroup): v for v in job_values(job, subgroup=None)}

    alpha = snapshot.agreement["all"]["measures"]["krippendorff_alpha_ordinal"]
    stored = values[("project", project.slug, "krippendorff_alpha_ordinal", "")]
    assert (stored.value, stored.ci_low, stored.ci_high) == (alpha["estimate"], alpha["low"], alpha["high"])
    assert stored.family == "agreement" and stored.series.team_id == team.pk
    assert ("project", project.slug, "krippendorff_alpha_ordinal", "reliable") in values
    # ann0: 10 of 10 gold right; ann1: 3 of 10: the project's accuracy on gold is 13 of 20.
    assert values[("project", project.slug, "project_gold_accuracy", "")].value == pytest.approx(0.65)
    assert values[("annotator", "ann0", "gold_accuracy", "")].value == 1.0
    assert values[("annotator", "ann1", "gold_accuracy", "")].value == pytest.approx(0.3)
    assert values[("annotator", "ann1", "gold_mae", "")].value == pytest.approx(1.3)
    assert values[("annotator", "ann0", "median_seconds", "")].value == pytest.approx(14.5)
    # ann1 graded 3,3,3,2,2,4,0,0,1,1: shares by grade.
    shares = {k[3]: v.value for k, v in values.items() if k[1] == "ann1" and k[2] == "label_share"}
    assert shares == {"0": 0.2, "1": 0.2, "2": 0.2, "3": 0.3, "4": 0.1}
    # An annotator without answers has undefined accuracy: NULL, and no label shares.
    assert values[("annotator", "ann3", "gold_accuracy", "")].value is None
    assert not any(k[1] == "ann3" and k[2] == "label_share" for k in values)
    assert not MetricValue.objects.filter(value=float("nan")).exists()


def test_it_adds_one_point_per_recompute_to_the_series_history(project: Project, people: list[User]) -> None:
    answer_gold(project, people)
    for _ in range(2):
        assert quality.quality_snapshot_refresh(project_id=project.pk) == "done"
    ann1 = Series.objects.get(kind="annotator", name="ann1")
    points = series_history(ann1, ["gold_accuracy"])["gold_accuracy"]
    assert [value for _, value in points] == [pytest.approx(0.3)] * 2
    assert ann1.family == "annotator" and ann1.team_id is None
    assert Series.objects.get(kind="project").label == f"project {project.name}"


def test_it_leaves_no_values_behind_when_a_recompute_is_deleted(project: Project, people: list[User]) -> None:
    answer_gold(project, people)
    quality.quality_snapshot_refresh(project_id=project.pk)
    assert MetricValue.objects.exists()
    QualityRecompute.objects.all().delete()
    assert not MetricValue.objects.exists()


def test_it_links_the_project_series_to_the_quality_dashboard(
    project: Project, people: list[User], client: Client
) -> None:
    quality.quality_snapshot_refresh(project_id=project.pk)
    series: Any = Series.objects.get(kind="project")
    assert series.url == reverse("annotations:quality", args=[project.slug])


def test_it_gives_the_projects_series_to_the_team_it_is_linked_to(
    project: Project, people: list[User]
) -> None:
    answer_gold(project, people)
    quality.quality_snapshot_refresh(project_id=project.pk)
    assert set(Series.objects.values_list("team_id", flat=True)) == {None}
    team = Team.objects.create(slug="search", name="Search")
    project.team = team
    project.save()
    assert set(Series.objects.values_list("team_id", flat=True)) == {team.pk}
    assert Series.objects.filter(kind="annotator").count() == 4


def test_it_forgets_a_deleted_projects_series(project: Project, people: list[User]) -> None:
    answer_gold(project, people)
    quality.quality_snapshot_refresh(project_id=project.pk)
    other = build_project(lead=project.created_by, annotators=people[:1], slug="other")
    quality.quality_snapshot_refresh(project_id=other.pk)
    assert Series.objects.count() == 5 + 2
    project.delete()
    assert set(Series.objects.values_list("kind", "key")) == {
        ("project", str(other.pk)),
        ("annotator", f"{other.pk}:{people[0].pk}"),
    }
    assert not MetricValue.objects.exclude(series__key__startswith=str(other.pk)).exists()


def test_it_links_the_quality_page_to_the_projects_series_for_the_teams_members(
    project: Project, people: list[User], lena: User
) -> None:
    from evalplatform.teams import team_member_set

    team = Team.objects.create(slug="search", name="Search")
    project.team = team
    project.save()
    quality.quality_snapshot_refresh(project_id=project.pk)
    series = Series.objects.get(kind="project")
    client = Client()
    client.force_login(lena)  # the project's lead, not a member of the team
    assert 'id="agreement-over-time"' not in client.get(f"/projects/{project.slug}/quality/").content.decode()
    team_member_set(team=team, user=lena, role="viewer")
    page = client.get(f"/projects/{project.slug}/quality/").content.decode()
    assert f'href="/teams/search/series/{series.pk}/" id="agreement-over-time"' in page
    assert client.get(f"/teams/search/series/{series.pk}/").status_code == 200
