"""The judging tables keep no index that another one already serves: every answer inserts an annotation,
every claim an assignment, and both move a task's counters (row versions that, where an indexed column
changes, write every index of the table again), so an index whose columns lead another's is pure cost."""

from __future__ import annotations

import pytest
from django.db import connection

from annotations.models import Annotation, AnnotatorCounts, Assignment, Task

pytestmark = pytest.mark.django_db

HOT_TABLES = [model._meta.db_table for model in (Annotation, Assignment, Task, AnnotatorCounts)]


def _indexes(table: str) -> list[tuple[str, tuple[int, ...], bool, bool]]:
    """(name, key columns, unique, partial) of each index of `table`."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, i.indkey::int2[], i.indisunique, i.indpred IS NOT NULL FROM pg_index i "
            "JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = %s::regclass ORDER BY c.relname",
            [table],
        )
        return [(name, tuple(keys), unique, partial) for name, keys, unique, partial in cursor.fetchall()]


@pytest.mark.parametrize("table", HOT_TABLES)
def test_no_plain_index_is_the_leading_columns_of_another(table: str) -> None:
    indexes = _indexes(table)
    redundant = [
        (name, other)
        for name, keys, unique, partial in indexes
        if not unique and not partial
        for other, other_keys, _, other_partial in indexes
        if other != name and not other_partial and other_keys[: len(keys)] == keys
    ]
    assert redundant == [], redundant


def test_the_foreign_keys_without_an_index_of_their_own_are_still_served() -> None:
    """The foreign keys that lost their single-column index (migration 0018) lead a full index still, so a
    lookup by each (a cascade, a filter) keeps an index to use."""
    dropped = {
        Annotation: ("project", "task", "annotator"),
        Assignment: ("task", "annotator"),
        Task: ("project",),
        AnnotatorCounts: ("project",),
    }
    for model, fields in dropped.items():
        table = model._meta.db_table
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT a.attname, a.attnum FROM pg_attribute a WHERE a.attrelid = %s::regclass AND a.attnum > 0",
                [table],
            )
            numbers = dict(cursor.fetchall())
        leading = {keys[0] for _, keys, _, partial in _indexes(table) if not partial}
        for field in fields:
            column = model._meta.get_field(field).column
            assert numbers[column] in leading, (table, column)
