"""The claim's lock, re-count and reservation of its first free candidate, as one PostgreSQL function
(`annotations.hotpath.reservation_take_first`): one round trip per claim instead of two or more."""

from django.db import migrations

# Each statement of a VOLATILE PL/pgSQL function takes a fresh snapshot (READ COMMITTED): the re-count
# after a task's lock sees every reservation committed before the lock was granted, as the separate
# statements it replaces did. The steps and their order are `hotpath.reservation_take_first_steps`'.
# ROWS 1: it returns one row, and the planner's default guess (1,000) joined the served task, topic and
# document by scanning their whole tables.
CREATE = """
CREATE OR REPLACE FUNCTION annotations_reserve_first(
    p_task_ids bigint[], p_project_id bigint, p_user_id bigint, p_now timestamptz, p_expires_at timestamptz,
    p_cap integer, p_reserved text, p_labelled text
) RETURNS TABLE (
    id annotations_assignment.id%TYPE,
    project_id annotations_assignment.project_id%TYPE,
    task_id annotations_assignment.task_id%TYPE,
    annotator_id annotations_assignment.annotator_id%TYPE,
    state annotations_assignment.state%TYPE,
    reserved_at annotations_assignment.reserved_at%TYPE,
    expires_at annotations_assignment.expires_at%TYPE,
    answered_at annotations_assignment.answered_at%TYPE,
    occupied integer,
    assigned_after integer,
    busy bigint[]
) LANGUAGE plpgsql VOLATILE ROWS 1 AS $$
#variable_conflict use_column
DECLARE
    v_task bigint;
    v_assigned integer;
    v_extra integer;
    v_occupied integer;
    v_row annotations_assignment%ROWTYPE;
    v_busy bigint[] := '{}';
BEGIN
    FOREACH v_task IN ARRAY p_task_ids LOOP
        -- The lock, if the task still has a place (`hotpath.task_lock`, SKIP LOCKED).
        SELECT t.assigned_count, t.extra_places INTO v_assigned, v_extra FROM annotations_task t
            WHERE t.id = v_task AND (p_cap IS NULL OR t.assigned_count < p_cap + t.extra_places)
            FOR NO KEY UPDATE SKIP LOCKED;
        IF NOT FOUND THEN
            -- Held by another claim, if it has a place (`hotpath.task_has_place`).
            IF EXISTS (SELECT 1 FROM annotations_task t WHERE t.id = v_task
                       AND (p_cap IS NULL OR t.assigned_count < p_cap + t.extra_places)) THEN
                v_busy := v_busy || v_task;
            END IF;
            CONTINUE;
        END IF;
        v_occupied := NULL;
        IF p_cap IS NOT NULL THEN
            -- The places taken, counted under the lock (`hotpath.occupying_count`).
            SELECT COUNT(*) INTO v_occupied FROM annotations_assignment a WHERE a.task_id = v_task
                AND (a.state = p_labelled OR (a.state = p_reserved AND a.expires_at > p_now));
            IF v_occupied >= p_cap + v_extra THEN
                -- The counter fell behind the places taken (`hotpath.assigned_count_set`).
                UPDATE annotations_task SET assigned_count = GREATEST(v_occupied, v_assigned, p_cap)
                    WHERE annotations_task.id = v_task;
                CONTINUE;
            END IF;
        END IF;
        INSERT INTO annotations_assignment (project_id, task_id, annotator_id, state, reserved_at, expires_at)
            VALUES (p_project_id, v_task, p_user_id, p_reserved, p_now, p_expires_at) RETURNING * INTO v_row;
        UPDATE annotations_task SET assigned_count = assigned_count + 1 WHERE annotations_task.id = v_task
            RETURNING assigned_count INTO v_assigned;
        RETURN QUERY SELECT v_row.id, v_row.project_id, v_row.task_id, v_row.annotator_id, v_row.state,
            v_row.reserved_at, v_row.expires_at, v_row.answered_at, v_occupied, v_assigned, v_busy;
        RETURN;
    END LOOP;
    -- None reserved: v_row is still all nulls.
    RETURN QUERY SELECT v_row.id, v_row.project_id, v_row.task_id, v_row.annotator_id, v_row.state,
        v_row.reserved_at, v_row.expires_at, v_row.answered_at, NULL::integer, NULL::integer, v_busy;
END
$$;
"""

DROP = "DROP FUNCTION IF EXISTS annotations_reserve_first(bigint[], bigint, bigint, timestamptz, timestamptz, integer, text, text)"


def create(apps, schema_editor):  # noqa: ARG001
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE, params=None)


def drop(apps, schema_editor):  # noqa: ARG001
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP, params=None)


class Migration(migrations.Migration):
    dependencies = [("annotations", "0014_judgeimport_machine_judge_import_extra_places")]

    operations = [migrations.RunPython(create, drop)]
