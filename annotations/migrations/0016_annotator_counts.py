"""Each annotator's answered assignments per project, by kind (`AnnotatorCounts`), kept by PostgreSQL
triggers: a claim reads one row instead of counting all of the annotator's assignments, a pass that grew
with every answer they gave (`annotations.hotpath.own_counts_with_candidates`)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

# An assignment counts once it is no longer reserved (labelled or released), as the kind of its task.
# AFTER ROW triggers run at the end of the statement that wrote the row: the hot path's one-statement
# answers and claims included. A decrement never creates a row (a table emptied before the assignments
# it counts, as a test's teardown may, stays empty). Django deletes a task's assignments before the task,
# so the task's kind is there to read.
CREATE = """
CREATE OR REPLACE FUNCTION annotations_counts_assignment() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    v_gold boolean;
BEGIN
    IF TG_OP <> 'INSERT' AND OLD.state <> 'reserved' THEN
        IF TG_OP = 'UPDATE' AND NEW.state <> 'reserved' AND NEW.task_id = OLD.task_id
                AND NEW.project_id = OLD.project_id AND NEW.annotator_id = OLD.annotator_id THEN
            RETURN NULL;  -- answered before and after: nothing moves
        END IF;
        SELECT t.is_gold INTO v_gold FROM annotations_task t WHERE t.id = OLD.task_id;
        IF v_gold IS NOT NULL THEN
            UPDATE annotations_annotatorcounts c SET
                done_ordinary = c.done_ordinary - CASE WHEN v_gold THEN 0 ELSE 1 END,
                done_gold = c.done_gold - CASE WHEN v_gold THEN 1 ELSE 0 END
            WHERE c.project_id = OLD.project_id AND c.annotator_id = OLD.annotator_id;
        END IF;
    END IF;
    IF TG_OP <> 'DELETE' AND NEW.state <> 'reserved' THEN
        SELECT t.is_gold INTO v_gold FROM annotations_task t WHERE t.id = NEW.task_id;
        INSERT INTO annotations_annotatorcounts AS c (project_id, annotator_id, done_ordinary, done_gold)
            VALUES (NEW.project_id, NEW.annotator_id, CASE WHEN v_gold THEN 0 ELSE 1 END,
                    CASE WHEN v_gold THEN 1 ELSE 0 END)
            ON CONFLICT (project_id, annotator_id) DO UPDATE SET
                done_ordinary = c.done_ordinary + EXCLUDED.done_ordinary,
                done_gold = c.done_gold + EXCLUDED.done_gold;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER annotations_counts_assignment
    AFTER INSERT OR UPDATE OR DELETE ON annotations_assignment
    FOR EACH ROW EXECUTE FUNCTION annotations_counts_assignment();

-- A task made gold (a gold import naming a pair already judged), or no longer gold: its answers move.
CREATE OR REPLACE FUNCTION annotations_counts_task_kind() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE annotations_annotatorcounts c SET
        done_ordinary = c.done_ordinary + CASE WHEN NEW.is_gold THEN -x.n ELSE x.n END,
        done_gold = c.done_gold + CASE WHEN NEW.is_gold THEN x.n ELSE -x.n END
    FROM (SELECT a.project_id, a.annotator_id, COUNT(*) AS n FROM annotations_assignment a
          WHERE a.task_id = NEW.id AND a.state <> 'reserved' GROUP BY a.project_id, a.annotator_id) x
    WHERE c.project_id = x.project_id AND c.annotator_id = x.annotator_id;
    RETURN NULL;
END
$$;

CREATE TRIGGER annotations_counts_task_kind
    AFTER UPDATE OF is_gold ON annotations_task
    FOR EACH ROW WHEN (OLD.is_gold IS DISTINCT FROM NEW.is_gold)
    EXECUTE FUNCTION annotations_counts_task_kind();

"""

# What was answered before the triggers existed (the migration runs in one transaction with them).
BACKFILL = """
INSERT INTO annotations_annotatorcounts (project_id, annotator_id, done_ordinary, done_gold)
    SELECT a.project_id, a.annotator_id, COUNT(*) FILTER (WHERE NOT t.is_gold), COUNT(*) FILTER (WHERE t.is_gold)
    FROM annotations_assignment a JOIN annotations_task t ON t.id = a.task_id
    WHERE a.state <> 'reserved' GROUP BY a.project_id, a.annotator_id;
"""

DROP = """
DROP TRIGGER IF EXISTS annotations_counts_task_kind ON annotations_task;
DROP FUNCTION IF EXISTS annotations_counts_task_kind();
DROP TRIGGER IF EXISTS annotations_counts_assignment ON annotations_assignment;
DROP FUNCTION IF EXISTS annotations_counts_assignment();
"""


def create(apps, schema_editor):  # noqa: ARG001
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE, params=None)
        schema_editor.execute(BACKFILL, params=None)


def drop(apps, schema_editor):  # noqa: ARG001
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("annotations", "0015_claimload_reserve_first"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="AnnotatorCounts",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("done_ordinary", models.IntegerField(default=0)),
                ("done_gold", models.IntegerField(default=0)),
                (
                    "annotator",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "project",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="annotations.project",
                    ),
                ),
            ],
            options={
                "verbose_name_plural": "annotator counts",
                "constraints": [
                    models.UniqueConstraint(fields=("project", "annotator"), name="annotator_counts_unique")
                ],
            },
        ),
        migrations.RunPython(create, drop),
    ]
