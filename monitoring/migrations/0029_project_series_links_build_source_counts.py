"""Two kinds of rows written before their writers were fixed, brought in line (data only, no schema):

- a judging project's series and its annotators' (and the alerts opened on them) that the demo linked to
  the project's own page, a 404 to the team members who read them, link to its quality page as a live
  recompute's do (`annotations.quality.services.project_quality_url`);
- a team's qrels sources made from a project's qrels build get the TREC export's queries and size in
  bytes (they had none: "—" and 0), and the build's maker as their uploader
  (`monitoring.files.uploads.qrels_source_for_build`). One pass over each such build's rows.
"""

from typing import Any

from django.db import migrations
from django.db.models import Q
from django.urls import NoReverseMatch, reverse


def _links(slug: str) -> tuple[str, str] | None:
    try:
        return (
            reverse("annotations:project-detail", args=[slug]),
            reverse("annotations:quality", args=[slug]),
        )
    except NoReverseMatch:  # the project pages are not routed in this deployment
        return None


def project_links(apps: Any, schema_editor: Any) -> None:
    Project = apps.get_model("annotations", "Project")  # noqa: N806 (a model class)
    Series = apps.get_model("series", "Series")  # noqa: N806
    AlertEvent = apps.get_model("monitoring", "AlertEvent")  # noqa: N806
    for pk, slug in Project.objects.values_list("pk", "slug").iterator():
        links = _links(slug)
        if links is None:
            continue
        old, new = links
        series = Series.objects.filter(
            Q(kind="project", object_id=pk) | Q(kind="annotator", key__startswith=f"{pk}:")
        )
        AlertEvent.objects.filter(rule__series__in=series, source_url=old).update(source_url=new)
        series.filter(url=old).update(url=new)


def build_source_counts(apps: Any, schema_editor: Any) -> None:
    QrelsSource = apps.get_model("monitoring", "QrelsSource")  # noqa: N806
    QrelsJudgment = apps.get_model("annotations", "QrelsJudgment")  # noqa: N806
    for source in QrelsSource.objects.filter(kind="build").select_related("build").iterator():
        build = source.build
        fields = []
        if source.num_queries is None or not source.size:
            qids: set[str] = set()
            size = 0
            rows = QrelsJudgment.objects.filter(build_id=build.pk).values_list("qid", "doc_id", "rel")
            for qid, doc_id, rel in rows.iterator():  # the lines of `evalcore.judging.qrels_trec`
                qids.add(qid)
                size += len(f"{qid} 0 {doc_id} {rel}\n".encode())
            source.num_queries, source.size = len(qids), size
            fields += ["num_queries", "size"]
        if build.created_by_id is not None and source.uploaded_by_id != build.created_by_id:
            source.uploaded_by_id = build.created_by_id
            fields.append("uploaded_by")
        if fields:
            source.save(update_fields=fields)


class Migration(migrations.Migration):
    dependencies = [
        ("monitoring", "0028_fusion_method_options"),
        ("annotations", "0019_counts_trigger_when"),
        ("series", "0001_series_and_metric_values"),
    ]

    operations = [
        migrations.RunPython(project_links, migrations.RunPython.noop),
        migrations.RunPython(build_source_counts, migrations.RunPython.noop),
    ]
