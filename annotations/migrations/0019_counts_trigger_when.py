"""The annotator counts' trigger (migration 0016) split by event, each with a WHEN condition: PostgreSQL
calls its function only for the writes that move a count. A claim's insert of a reservation (every
answer's next task) queued an AFTER event and ran the PL/pgSQL function to find nothing to do; a WHEN
condition is checked in the executor and queues nothing. The function and what it counts are unchanged."""

from django.db import migrations

# The function returns at once for these, which the conditions leave out: an insert or a delete of a
# reservation, an update that leaves a reservation a reservation, or one that leaves an answered
# assignment answered on the same task, project and annotator.
CREATE = """
DROP TRIGGER IF EXISTS annotations_counts_assignment ON annotations_assignment;
CREATE TRIGGER annotations_counts_assignment_insert
    AFTER INSERT ON annotations_assignment
    FOR EACH ROW WHEN (NEW.state <> 'reserved')
    EXECUTE FUNCTION annotations_counts_assignment();
CREATE TRIGGER annotations_counts_assignment_update
    AFTER UPDATE ON annotations_assignment
    FOR EACH ROW WHEN ((OLD.state <> 'reserved' OR NEW.state <> 'reserved')
        AND NOT (OLD.state <> 'reserved' AND NEW.state <> 'reserved' AND NEW.task_id = OLD.task_id
                 AND NEW.project_id = OLD.project_id AND NEW.annotator_id = OLD.annotator_id))
    EXECUTE FUNCTION annotations_counts_assignment();
CREATE TRIGGER annotations_counts_assignment_delete
    AFTER DELETE ON annotations_assignment
    FOR EACH ROW WHEN (OLD.state <> 'reserved')
    EXECUTE FUNCTION annotations_counts_assignment();
"""

DROP = """
DROP TRIGGER IF EXISTS annotations_counts_assignment_insert ON annotations_assignment;
DROP TRIGGER IF EXISTS annotations_counts_assignment_update ON annotations_assignment;
DROP TRIGGER IF EXISTS annotations_counts_assignment_delete ON annotations_assignment;
CREATE TRIGGER annotations_counts_assignment
    AFTER INSERT OR UPDATE OR DELETE ON annotations_assignment
    FOR EACH ROW EXECUTE FUNCTION annotations_counts_assignment();
"""


def create(apps, schema_editor):  # noqa: ARG001
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE, params=None)


def drop(apps, schema_editor):  # noqa: ARG001
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP, params=None)


class Migration(migrations.Migration):
    dependencies = [("annotations", "0018_covered_foreign_key_indexes")]

    operations = [migrations.RunPython(create, drop)]
