"""An answer and the claim of the annotator's next task as one PostgreSQL function
(`annotations.hotpath.answer_and_claim`): one round trip, in autocommit its own transaction, where the
answer's transaction took five (BEGIN, the answer, the counts and candidates, the reservation, COMMIT).
And the gold draw (`annotations.selectors.gold_draw`) in SQL, so that the function and the Python claim
serve gold at the same positions."""

from django.db import migrations

# The gold draw: a 32-bit integer hash of the annotator's seed and their position in the queue, as a float
# in [0, 1). `selectors.gold_draw` computes the same in Python (tests/annotations/test_gold_draw.py holds
# the two equal). Every product stays under 2**63: no bigint overflow.
GOLD_DRAW = """
CREATE OR REPLACE FUNCTION annotations_gold_draw(p_seed bigint, p_position bigint) RETURNS float8
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    x bigint := (p_seed # ((p_position & 2147483647) * 2654435761)) & 4294967295;
BEGIN
    x := ((x # (x >> 16)) * 73244475) & 4294967295;
    x := ((x # (x >> 16)) * 73244475) & 4294967295;
    x := x # (x >> 16);
    RETURN x / 4294967296.0::float8;
END
$$;
"""

# The steps and their order are the Python path's (`annotations.services._answer` with the next claim,
# `_claim_locked` and `_claim_one`, each statement of `annotations.hotpath` written out here), for the
# plain case; anything else is left to that path:
#
# - the answer: `hotpath.answer_plain`'s statement, the membership's row locked first (the order of a
#   claim's and an undo's locks). When it writes nothing (an answer that is not
#   the plain case: refused, too fast, an expired reservation, no longer an annotator) the function
#   returns `fallback` and the caller goes the step-by-step way, as it does after that statement;
# - the claim, with the membership's lock the answer took (and no reservation held: the answered one was
#   the annotator's one reservation in the project): the annotator's counts as
#   `hotpath._kept_counts_parts` reads them, the project's open totals (`hotpath.open_totals`, unless the
#   caller passes its cached ones), the break (`selectors.session_state`), the gold turn
#   (`selectors.gold_turn`), and each kind's stages read a window of 16 candidates
#   (`services.CLAIM_WINDOWS[0]`) and reserve the first free one (`annotations_reserve_first`). Where the
#   Python claim would go on to something this does not (a second window of 256 candidates, candidates
#   another claim holds locked), the function returns `deferred` with the answer stored, and the caller
#   claims in a transaction of its own, as the Python path does when its in-transaction claim would wait
#   (`services._answer_and_claim`); a break due returns `break`.
#
# Each statement of a VOLATILE function takes a fresh snapshot and sees the function's own writes: the
# counts read after the answer count it. Windows are written as literals, as in `hotpath._limit`.
# tests/annotations/test_hotpath_contract.py holds the function to the step-by-step path on generated
# states; ROWS 1 as for `annotations_reserve_first`.
ANSWER_CLAIM = """
CREATE OR REPLACE FUNCTION annotations_answer_claim(
    p_assignment_id bigint, p_project_id bigint, p_user_id bigint, p_now timestamptz,
    p_state text, p_assigned integer, p_labels integer, p_too_fast boolean, p_min_seconds integer,
    p_grade integer, p_skipped boolean, p_unclear boolean, p_comment text,
    p_expires_at timestamptz, p_overlap integer, p_gold_overlap integer, p_extra boolean,
    p_prioritised boolean, p_open_ordinary integer, p_open_gold integer,
    p_gold_min float8, p_gold_max float8, p_gold_share float8, p_session_cap integer, p_session_break integer
) RETURNS TABLE (
    x_outcome text,
    x_answer_id bigint,
    x_answer_task_id bigint,
    x_seconds float8,
    x_done_ordinary integer,
    x_done_gold integer,
    x_live_ordinary integer,
    x_live_gold integer,
    x_available_ordinary integer,
    x_available_gold integer,
    x_open_ordinary integer,
    x_open_gold integer,
    x_assigned_after integer,
    id annotations_assignment.id%TYPE,
    project_id annotations_assignment.project_id%TYPE,
    task_id annotations_assignment.task_id%TYPE,
    annotator_id annotations_assignment.annotator_id%TYPE,
    state annotations_assignment.state%TYPE,
    reserved_at annotations_assignment.reserved_at%TYPE,
    expires_at annotations_assignment.expires_at%TYPE,
    answered_at annotations_assignment.answered_at%TYPE
) LANGUAGE plpgsql VOLATILE ROWS 1 AS $$
#variable_conflict use_column
DECLARE
    v_seed bigint;
    v_dismissed timestamptz;
    v_since timestamptz;
    v_started_at timestamptz;
    v_previous timestamptz;
    v_created timestamptz;
    v_answer_id bigint;
    v_answer_task bigint;
    v_seconds float8;
    v_done_o integer;
    v_done_g integer;
    v_held_o integer;
    v_held_g integer;
    v_held integer;
    v_open_o integer := p_open_ordinary;
    v_open_g integer := p_open_gold;
    v_avail_o integer;
    v_avail_g integer;
    v_start bigint;
    v_served integer;
    v_planned integer;
    v_total integer;
    v_gold_allowed boolean;
    v_gold_first boolean;
    v_kinds boolean[];
    v_gold boolean;
    v_cap integer;
    v_stage text;
    v_stages text[];
    v_ids bigint[];
    v_try bigint[];
    v_tried bigint[] := '{}';
    v_busy bigint[] := '{}';
    v_started bigint[];
    v_prio bigint[];
    v_fresh bigint[];
    v_wrapped bigint[];
    v_outcome text;
    v_id annotations_assignment.id%TYPE;
    v_project annotations_assignment.project_id%TYPE;
    v_task annotations_assignment.task_id%TYPE;
    v_annotator annotations_assignment.annotator_id%TYPE;
    v_state annotations_assignment.state%TYPE;
    v_reserved_at annotations_assignment.reserved_at%TYPE;
    v_expires_at annotations_assignment.expires_at%TYPE;
    v_answered_at annotations_assignment.answered_at%TYPE;
    v_assigned_after integer;
    v_taken_busy bigint[];
BEGIN
    -- Every way out of the block sets `v_outcome`; the one row is returned after it.
    <<answer_and_claim>>
    BEGIN
        -- The answer (`hotpath.answer_plain`): the membership's lock first, then the assignment's.
        WITH m AS (
            SELECT mm.shuffle_seed, mm.break_dismissed_at FROM annotations_projectmembership mm
            WHERE mm.project_id = p_project_id AND mm.user_id = p_user_id AND mm.role = 'annotator' FOR UPDATE
        ), answered AS (
            UPDATE annotations_assignment aa SET state = p_state, answered_at = p_now
            WHERE aa.id = p_assignment_id AND aa.project_id = p_project_id AND aa.annotator_id = p_user_id
                AND aa.state = 'reserved' AND aa.expires_at > p_now
                AND GREATEST(0, EXTRACT(EPOCH FROM p_now - aa.reserved_at)) >= p_min_seconds
                AND EXISTS (SELECT 1 FROM m)
            RETURNING aa.task_id, GREATEST(0, EXTRACT(EPOCH FROM p_now - aa.reserved_at))::float8 AS seconds
        ), counted AS (
            UPDATE annotations_task tt SET assigned_count = tt.assigned_count + p_assigned,
                label_count = tt.label_count + p_labels
            WHERE tt.id = (SELECT ans.task_id FROM answered ans)
        ), inserted AS (
            INSERT INTO annotations_annotation (assignment_id, project_id, task_id, annotator_id, grade,
                seconds_spent, skipped, unclear, too_fast, comment, created_at)
            SELECT p_assignment_id, p_project_id, ans.task_id, p_user_id, p_grade, ans.seconds, p_skipped,
                p_unclear, p_too_fast, p_comment, p_now FROM answered ans
            RETURNING annotations_annotation.id, annotations_annotation.task_id,
                annotations_annotation.seconds_spent
        )
        SELECT m.shuffle_seed, m.break_dismissed_at, i.id, i.task_id, i.seconds_spent
            INTO v_seed, v_dismissed, v_answer_id, v_answer_task, v_seconds
            FROM m JOIN inserted i ON TRUE;
        IF v_answer_id IS NULL THEN
            v_outcome := 'fallback';
            EXIT answer_and_claim;
        END IF;

        -- No reservation is held now: the one answered was the annotator's one reservation in the project (a
        -- unique index), so the Python claim's serving of a held one (`services._held_claim`) has no case here.

        -- The break (`selectors.session_state`): the run of answers back from now with no gap of the
        -- project's break length, since the last dismissed prompt; due once it is as long as the cap.
        IF p_session_cap > 0 THEN
            v_since := p_now - make_interval(mins => p_session_cap) - make_interval(mins => p_session_break);
            IF v_dismissed IS NOT NULL AND v_dismissed > v_since THEN
                v_since := v_dismissed;
            END IF;
            v_started_at := p_now;
            v_previous := p_now;
            FOR v_created IN SELECT n.created_at FROM annotations_annotation n WHERE n.annotator_id = p_user_id
                    AND n.project_id = p_project_id AND n.created_at >= v_since ORDER BY n.created_at DESC LOOP
                EXIT WHEN v_previous - v_created >= make_interval(mins => p_session_break);
                v_started_at := v_created;
                v_previous := v_created;
            END LOOP;
            IF p_now - v_started_at >= make_interval(mins => p_session_cap) THEN
                v_outcome := 'break';
                EXIT answer_and_claim;
            END IF;
        END IF;

        -- The counts (`hotpath._kept_counts_parts`, with no reservation held).
        SELECT COALESCE(MAX(c.done_ordinary), 0), COALESCE(MAX(c.done_gold), 0) INTO v_done_o, v_done_g
            FROM annotations_annotatorcounts c WHERE c.project_id = p_project_id AND c.annotator_id = p_user_id;
        -- Held with a place left, by kind (`held_open` there): the released assignments whose task has a
        -- place, and the tasks with a place and one taken that they labelled, off the task index. Every gold
        -- task has a place when gold has no cap: all of their gold answers.
        FOREACH v_gold IN ARRAY ARRAY[false, true] LOOP
            v_cap := CASE WHEN v_gold THEN p_gold_overlap ELSE p_overlap END;
            IF v_cap IS NULL THEN
                v_held_g := v_done_g;
                CONTINUE;
            END IF;
            SELECT (SELECT COUNT(*) FROM annotations_assignment a2
                    CROSS JOIN LATERAL (SELECT tk.is_gold, tk.assigned_count, tk.extra_places FROM annotations_task tk
                                        WHERE tk.id = a2.task_id OFFSET 0) t2
                    WHERE a2.project_id = p_project_id AND a2.annotator_id = p_user_id AND a2.state = 'released'
                    AND t2.is_gold = v_gold AND t2.assigned_count < v_cap + t2.extra_places)
                + (SELECT COUNT(*) FROM annotations_task t3 WHERE t3.project_id = p_project_id
                    AND t3.is_gold = v_gold AND t3.assigned_count >= 1 AND t3.assigned_count < v_cap
                    AND COALESCE((SELECT true FROM annotations_assignment a3 WHERE a3.task_id = t3.id
                                  AND a3.annotator_id + 0 = p_user_id AND a3.state = 'labelled'), false))
                + (SELECT COUNT(*) FROM annotations_task t3 WHERE t3.project_id = p_project_id
                    AND t3.extra_places > 0 AND t3.is_gold = v_gold AND t3.assigned_count >= v_cap
                    AND t3.assigned_count < v_cap + t3.extra_places
                    AND COALESCE((SELECT true FROM annotations_assignment a3 WHERE a3.task_id = t3.id
                                  AND a3.annotator_id + 0 = p_user_id AND a3.state = 'labelled'), false))
                INTO v_held;
            IF v_gold THEN
                v_held_g := v_held;
            ELSE
                v_held_o := v_held;
            END IF;
        END LOOP;
        IF v_open_o IS NULL THEN  -- `hotpath.open_totals`
            SELECT COUNT(*) FILTER (WHERE NOT ot.is_gold AND ot.assigned_count < p_overlap)
                    + (SELECT COUNT(*) FROM annotations_task x WHERE x.project_id = p_project_id
                       AND x.extra_places > 0 AND NOT x.is_gold AND x.assigned_count >= p_overlap
                       AND x.assigned_count < p_overlap + x.extra_places),
                COUNT(*) FILTER (WHERE ot.is_gold AND (p_gold_overlap IS NULL OR ot.assigned_count < p_gold_overlap))
                INTO v_open_o, v_open_g
                FROM annotations_task ot WHERE ot.project_id = p_project_id;
        END IF;
        v_avail_o := GREATEST(0, v_open_o - v_held_o);
        v_avail_g := GREATEST(0, v_open_g - v_held_g);

        -- The gold turn (`selectors.QueueCounts`, `selectors.gold_turn`), nothing live.
        v_served := v_done_o + v_done_g;
        v_total := v_done_o + v_avail_o;
        v_planned := CASE WHEN p_gold_share < 1 THEN round(v_total * p_gold_share / (1 - p_gold_share))::integer
                          ELSE 0 END;
        v_gold_allowed := v_avail_g > 0 AND v_done_g < v_planned;
        v_gold_first := v_gold_allowed AND NOT (v_done_g + 1 > p_gold_max * (v_served + 1) + 1)
            AND (v_done_g < p_gold_min * (v_served + 1) - 1
                 OR annotations_gold_draw(v_seed, v_served) < p_gold_share);
        v_kinds := CASE WHEN v_gold_first THEN ARRAY[true, false]
                        WHEN v_gold_allowed THEN ARRAY[false, true] ELSE ARRAY[false] END;
        v_start := v_seed % 2147483647;  -- `selectors.rank_start` (TASK_RANK_MODULUS)

        v_outcome := 'empty';  -- unless a kind's stages reserve a task or leave the claim to Python
        FOREACH v_gold IN ARRAY v_kinds LOOP
            v_cap := CASE WHEN v_gold THEN p_gold_overlap ELSE p_overlap END;
            IF v_gold THEN
                v_stages := ARRAY['fresh_gold', 'wrapped_gold'];
            ELSE
                -- The first window of each ordinary stage, in one snapshot (`hotpath.own_counts_with_candidates`;
                -- OFFSET 0 keeps `x` a subquery, whose fresh window the CASE reads: merged, it was read twice).
                SELECT x.started, x.prio, x.fresh,
                        CASE WHEN cardinality(x.fresh) < 16 THEN ARRAY(
                            SELECT t.id FROM annotations_task t WHERE t.project_id = p_project_id
                            AND t.is_gold = false AND t.assigned_count = 0 AND t.rank < v_start
                            AND NOT COALESCE((SELECT true FROM annotations_assignment a WHERE a.task_id = t.id
                                              AND a.annotator_id + 0 = p_user_id), false)
                            ORDER BY t.rank LIMIT 16) END
                    INTO v_started, v_prio, v_fresh, v_wrapped
                    FROM (SELECT
                        CASE WHEN p_overlap > 1 THEN ARRAY(
                            SELECT t.id FROM annotations_task t WHERE t.project_id = p_project_id
                            AND NOT t.is_gold AND t.assigned_count > 0 AND t.assigned_count < p_overlap
                            AND NOT COALESCE((SELECT true FROM annotations_assignment a WHERE a.task_id = t.id
                                              AND a.annotator_id + 0 = p_user_id), false)
                            ORDER BY t.assigned_count DESC, hashint8extended(t.id::bigint, v_seed) LIMIT 16) END
                            AS started,
                        CASE WHEN p_prioritised THEN ARRAY(
                            SELECT t.id FROM annotations_task t WHERE t.project_id = p_project_id
                            AND NOT t.is_gold AND t.assigned_count = 0 AND t.priority IS NOT NULL
                            AND NOT COALESCE((SELECT true FROM annotations_assignment a WHERE a.task_id = t.id
                                              AND a.annotator_id + 0 = p_user_id), false)
                            ORDER BY t.priority, t.id LIMIT 16) END AS prio,
                        ARRAY(
                            SELECT t.id FROM annotations_task t WHERE t.project_id = p_project_id
                            AND t.is_gold = false AND t.assigned_count = 0 AND t.rank >= v_start
                            AND NOT COALESCE((SELECT true FROM annotations_assignment a WHERE a.task_id = t.id
                                              AND a.annotator_id + 0 = p_user_id), false)
                            ORDER BY t.rank LIMIT 16) AS fresh OFFSET 0) x;
                v_stages := ARRAY['fresh', 'wrapped'];
                IF p_prioritised THEN v_stages := array_prepend('prio'::text, v_stages); END IF;
                IF p_overlap > 1 THEN v_stages := array_prepend('started'::text, v_stages); END IF;
                IF p_extra THEN v_stages := array_prepend('extra'::text, v_stages); END IF;
            END IF;
            FOREACH v_stage IN ARRAY v_stages LOOP
                IF v_stage = 'extra' THEN  -- `hotpath.extra_candidates_sql`
                    v_ids := ARRAY(
                        SELECT t.id FROM annotations_task t WHERE t.project_id = p_project_id
                        AND t.extra_places > 0 AND NOT t.is_gold AND t.assigned_count < p_overlap + t.extra_places
                        AND NOT COALESCE((SELECT true FROM annotations_assignment a WHERE a.task_id = t.id
                                          AND a.annotator_id + 0 = p_user_id), false)
                        ORDER BY t.assigned_count DESC, t.id LIMIT 16);
                ELSIF v_stage = 'started' THEN
                    v_ids := v_started;
                ELSIF v_stage = 'prio' THEN
                    v_ids := v_prio;
                ELSIF v_stage = 'fresh' THEN
                    v_ids := v_fresh;
                ELSIF v_stage = 'wrapped' THEN
                    v_ids := v_wrapped;
                ELSIF v_stage = 'fresh_gold' THEN  -- `hotpath.fresh_candidates_sql`, gold
                    v_ids := ARRAY(
                        SELECT t.id FROM annotations_task t WHERE t.project_id = p_project_id AND t.is_gold = true
                        AND (p_gold_overlap IS NULL OR t.assigned_count < p_gold_overlap + t.extra_places)
                        AND t.rank >= v_start
                        AND NOT COALESCE((SELECT true FROM annotations_assignment a WHERE a.task_id = t.id
                                          AND a.annotator_id + 0 = p_user_id), false)
                        ORDER BY t.rank LIMIT 16);
                ELSE
                    v_ids := ARRAY(
                        SELECT t.id FROM annotations_task t WHERE t.project_id = p_project_id AND t.is_gold = true
                        AND (p_gold_overlap IS NULL OR t.assigned_count < p_gold_overlap + t.extra_places)
                        AND t.rank < v_start
                        AND NOT COALESCE((SELECT true FROM annotations_assignment a WHERE a.task_id = t.id
                                          AND a.annotator_id + 0 = p_user_id), false)
                        ORDER BY t.rank LIMIT 16);
                END IF;
                v_try := ARRAY(SELECT u.x FROM unnest(v_ids) WITH ORDINALITY u(x, n)
                               WHERE NOT u.x = ANY(v_tried) ORDER BY u.n);
                IF cardinality(v_try) > 0 THEN
                    v_tried := v_tried || v_try;
                    SELECT r.id, r.project_id, r.task_id, r.annotator_id, r.state, r.reserved_at, r.expires_at,
                            r.answered_at, r.assigned_after, r.busy
                        INTO v_id, v_project, v_task, v_annotator, v_state, v_reserved_at, v_expires_at,
                            v_answered_at, v_assigned_after, v_taken_busy
                        FROM annotations_reserve_first(v_try, p_project_id, p_user_id, p_now, p_expires_at, v_cap,
                            'reserved', 'labelled') r;
                    IF v_id IS NOT NULL THEN
                        IF v_gold THEN
                            v_avail_g := GREATEST(0, v_avail_g - 1);
                        ELSE
                            v_avail_o := GREATEST(0, v_avail_o - 1);
                        END IF;
                        v_outcome := 'task';
                        EXIT answer_and_claim;
                    END IF;
                    v_busy := v_busy || v_taken_busy;
                END IF;
                IF cardinality(v_ids) >= 16 THEN  -- the Python claim reads the next window: left to it
                    v_outcome := 'deferred';
                    EXIT answer_and_claim;
                END IF;
            END LOOP;
            IF cardinality(v_busy) > 0 THEN  -- it would wait for another claim's locks: left to a claim of its own
                v_outcome := 'deferred';
                EXIT answer_and_claim;
            END IF;
        END LOOP;
    END;

    -- The counts only with a claim made (`task`, `empty`); the assignment only with a task reserved.
    RETURN QUERY SELECT v_outcome, v_answer_id, v_answer_task, v_seconds,
        CASE WHEN v_outcome IN ('task', 'empty') THEN v_done_o END,
        CASE WHEN v_outcome IN ('task', 'empty') THEN v_done_g END,
        CASE v_outcome WHEN 'task' THEN (NOT v_gold)::integer WHEN 'empty' THEN 0 END,
        CASE v_outcome WHEN 'task' THEN v_gold::integer WHEN 'empty' THEN 0 END,
        CASE WHEN v_outcome IN ('task', 'empty') THEN v_avail_o END,
        CASE WHEN v_outcome IN ('task', 'empty') THEN v_avail_g END,
        v_open_o, v_open_g, v_assigned_after, v_id, v_project, v_task, v_annotator, v_state, v_reserved_at,
        v_expires_at, v_answered_at;
END
$$;
"""

DROP = """
DROP FUNCTION IF EXISTS annotations_answer_claim(bigint, bigint, bigint, timestamptz, text, integer, integer,
    boolean, integer, integer, boolean, boolean, text, timestamptz, integer, integer, boolean, boolean,
    integer, integer, float8, float8, float8, integer, integer);
DROP FUNCTION IF EXISTS annotations_gold_draw(bigint, bigint);
"""


def create(apps, schema_editor):  # noqa: ARG001
    if schema_editor.connection.vendor == "postgresql":
        for sql in (GOLD_DRAW, ANSWER_CLAIM):
            schema_editor.execute(sql, params=None)


def drop(apps, schema_editor):  # noqa: ARG001
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP, params=None)


class Migration(migrations.Migration):
    dependencies = [("annotations", "0016_annotator_counts")]

    operations = [migrations.RunPython(create, drop)]
