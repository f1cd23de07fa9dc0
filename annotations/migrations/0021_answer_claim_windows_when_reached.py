"""`annotations_answer_claim` (migrations 0017 and 0020) reading each ordinary stage's window of candidates
when the claim reaches that stage, where it read all of them first, in one statement. A claim served by
the started stage (two of a task's three claims at overlap 3) read the fresh window for nothing.

The gain is small against the rest of the answer, and near this machine's noise: one connection
answering for ten annotators in turn (a project as `benchmarks/annotation_load.py` makes), the 0020 and
this function alternated round by round, in three such comparisons the function's mean database CPU per
answer was 7%, 0% and 7% lower (the last, 16 pairs of 600 answers: lower in 11 pairs, 2.15 against
2.32 ms, the same median). docs/benchmarks.md has the figures.

The stages, their order, their windows and what is done with each are unchanged. A window read later sees
a later snapshot (each statement of a VOLATILE function takes its own): under concurrent claims it is no
older than before, and one claim alone reads the same rows. The rest of the function is 0020's text: the
windows' statements are cut from it and moved into the stage loop, and the variables that held them go."""

import re
from importlib import import_module

from django.db import migrations

_0020 = import_module("annotations.migrations.0020_answer_claim_sign_in")

# 0020's statement that read the four ordinary windows, from its comment to its end.
EAGER_START = "                -- The first window of each ordinary stage, in one snapshot"
EAGER_END = "OFFSET 0) x;\n"

# Each window's statement in it, told apart by its condition.
WINDOWS = {
    "started": "t.assigned_count > 0 AND t.assigned_count < p_overlap",
    "prio": "t.priority IS NOT NULL",
    "fresh": "t.rank >= v_start",
    "wrapped": "t.rank < v_start",
}

# 0020's stage loop took each window from the variable that held it; both go.
STAGE_READS = "".join(
    f"                ELSIF v_stage = '{stage}' THEN\n                    v_ids := v_{stage};\n"
    for stage in WINDOWS
)
WINDOW_VARIABLES = "".join(f"    v_{stage} bigint[];\n" for stage in WINDOWS)


def _arrays(sql: str) -> list[str]:
    """Each `ARRAY(SELECT ...)` in `sql`, its parentheses balanced."""
    found = []
    for match in re.finditer(r"ARRAY\(\n", sql):
        depth = 0
        for end in range(match.end() - 2, len(sql)):  # from the opening parenthesis
            depth += {"(": 1, ")": -1}.get(sql[end], 0)
            if depth == 0:
                found.append(sql[match.start() : end + 1])
                break
    return found


def _reindented(array: str) -> str:
    """A window's statement, indented as the stage loop's others are."""
    first, *rest = array.split("\n")
    margin = min(len(line) - len(line.lstrip()) for line in rest)
    return "\n".join([first, *(" " * 24 + line[margin:] for line in rest)])


def function_sql() -> str:
    sql = _0020._guarded()
    start = sql.index(EAGER_START)
    end = sql.index(EAGER_END, start) + len(EAGER_END)
    windows = {}
    for array in _arrays(sql[start:end]):
        (stage,) = (stage for stage, condition in WINDOWS.items() if condition in array)
        windows[stage] = _reindented(array)
    assert sorted(windows) == sorted(WINDOWS), windows
    reads = "".join(
        f"                ELSIF v_stage = '{stage}' THEN  -- read when reached\n"
        f"                    v_ids := {windows[stage]};\n"
        for stage in WINDOWS
    )
    assert sql.count(STAGE_READS) == 1 and sql.count(WINDOW_VARIABLES) == 1
    return sql[:start].replace(WINDOW_VARIABLES, "") + sql[end:].replace(STAGE_READS, reads)


def create(apps, schema_editor):  # noqa: ARG001
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(function_sql(), params=None)


def restore(apps, schema_editor):  # noqa: ARG001
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(_0020._guarded(), params=None)


class Migration(migrations.Migration):
    dependencies = [("annotations", "0020_answer_claim_sign_in")]

    operations = [migrations.RunPython(create, restore)]
