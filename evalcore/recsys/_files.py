"""Read recommendation lists, interactions and an item table from CSV files into one `RecsysData`.

| file         | header               | what                                                   |
|--------------|----------------------|--------------------------------------------------------|
| recs         | `user,item,rank`     | each user's list; rank 1 is the top                    |
| interactions | `user,item`          | held-out interactions: the relevant items              |
| history      | `user,item`          | earlier interactions: popularity and expectations      |
| items        | `item[,category]`    | the catalog, one row per item, with its category       |

User and item ids are strings, encoded to integer codes by Arrow's hash tables (no Python object
per row). The lists' and interactions' items are read as codes per CSV block (each block hashed in
a small table of its own distinct items); one table then takes the catalog's items, then each
block's distinct items, so that the catalog's items get codes 0 .. n - 1 in the file's order and
every other item its code in order of first appearance. Users come in runs: the first user of each
run of every file goes through one table, the lists' first. With an items file the catalog is that
file, and an item outside it is an error wherever it appears; without one, the catalog is every item
seen in any file (so catalog coverage is then an upper bound). Ranks are integers below 2**31 in size. Popularity counts the history's rows when a history is given, else the
interactions' rows, every row counting, including those of users without a list.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from evalcore.arrow import binary_length, from_numpy, keep, small_pages, sort_indices, take, to_numpy
from evalcore.csvfiles import CsvSchema, CsvTable, encode_column, encode_runs_together, read_csv, unify_codes
from evalcore.recsys._data import (
    IntArray,
    Interactions,
    RecommendationLists,
    RepeatedEntryError,
    first_repeat,
)
from evalcore.recsys._registry import RecsysData

PathLike = str | Path

RECS = CsvSchema({"user": "text", "item": "code", "rank": "small integer"}, ("user", "item", "rank"))
INTERACTIONS = CsvSchema({"user": "text", "item": "code"}, ("user", "item"))
ITEMS = CsvSchema({"item": "text", "category": "text"}, ("item",))


@dataclass(frozen=True)
class RecsysFiles:
    """The data read, and what the reader decided on the way (for the command's report)."""

    data: RecsysData
    n_interaction_rows: int
    n_users_without_list: int  # users with interactions but no list (scored 0 with `complete`)
    popularity_source: str  # "history", "interactions" or "" (none)
    explicit_catalog: bool
    user_ids: pa.Array  # row u of the lists is user_ids[u]
    item_ids: pa.Array  # item code i is item_ids[i]

    def summary(self, k: int | None) -> dict[str, Any]:
        """What was evaluated, for a report: the cutoff (the lists' depth when `k` is None), the users
        and items, and where the catalog and the popularity came from."""
        lists, relevant = self.data.lists, self.data.relevant
        return {
            "k": k or lists.depth,
            "n_users": lists.n_users,
            "n_users_with_relevant": int((relevant.per_user() > 0).sum()) if relevant else 0,
            "n_users_without_list": self.n_users_without_list,
            "n_items": lists.n_items,
            "catalog": "items file" if self.explicit_catalog else "every item seen",
            "popularity_from": self.popularity_source,
        }


def read_recsys_files(
    recs: PathLike,
    interactions: PathLike | None = None,
    *,
    items: PathLike | None = None,
    history: PathLike | None = None,
    k: int | None = None,
    complete: bool = False,
) -> RecsysFiles:
    """Read and encode the files. `k` keeps each list's first k items (all when None); with
    `complete`, users who have interactions but no list get an empty one (they score 0 on accuracy).
    The baseline of `serendipity_baseline` is the k most popular items (ties by item id), k being
    the cutoff, or the lists' depth without one. Pass the same `k` on to `evaluate_recommendations`:
    the reader only cuts the lists, and a k beyond the longest list must still reach the metrics."""
    with small_pages():
        return _read(recs, interactions, items, history, k, complete)


def _read(
    recs_path: PathLike,
    interactions_path: PathLike | None,
    items_path: PathLike | None,
    history_path: PathLike | None,
    k: int | None,
    complete: bool,
) -> RecsysFiles:
    catalog_table = read_csv(items_path, ITEMS) if items_path is not None else None
    recs = _read_rows(recs_path, RECS)
    interactions = _read_rows(interactions_path, INTERACTIONS) if interactions_path is not None else None
    history = _read_rows(history_path, INTERACTIONS) if history_path is not None else None

    catalog = None
    files = [f for f in (recs, interactions, history) if f is not None]
    if catalog_table is not None:
        catalog = _Catalog(
            _encode_items(files, catalog_table),
            category_codes(catalog_table)[1] if catalog_table.has("category") else None,
        )
        item_ids = catalog.ids
    else:
        item_ids = _encode_items(files, None)
    # Every file's users in one hash table, the lists' first: their users are 0 .. listed - 1, then
    # the interactions' users without a list (`without_list` of them) in order of first appearance.
    user_values = _encode_users(files)
    listed = int(recs.users.max()) + 1 if len(recs.users) else 0
    without_list = 0
    relevant_users = None
    if interactions is not None:
        interactions.table.refuse_empty("user", user_values, interactions.users)
        relevant_users = interactions.users.copy()
        if relevant_users.size and (strangers := relevant_users >= listed).any():
            # Users with held-out interactions but no list: counted, and with `complete` given an empty one.
            without_list = int(relevant_users.max()) + 1 - listed
            if not complete:
                relevant_users[strangers] = -1
    user_ids = user_values.slice(0, listed + (without_list if complete else 0))
    n_users, n_items = len(user_ids), len(item_ids)
    lists = _lists(recs, item_ids, n_users, k)

    relevant = past = None
    counts = None  # each item's interactions: the popularity
    if interactions is not None:
        assert relevant_users is not None
        items = interactions.item_codes(item_ids)
        relevant = _pairs(relevant_users, items, n_users, n_items)
        counts = np.bincount(items, minlength=n_items)
    if history is not None:
        items = history.item_codes(item_ids)
        history.table.refuse_empty("user", user_values, history.users)
        users = np.where(history.users < n_users, history.users, -1)  # -1: a user without a list
        past = _pairs(users, items, n_users, n_items)
        counts = np.bincount(items, minlength=n_items)
    data = RecsysData(
        lists,
        relevant=relevant,
        history=past,
        popularity=None if counts is None else counts.astype(np.float64),
        categories=None if catalog is None else catalog.categories,
        baseline=None if counts is None else _most_popular(counts, k or lists.depth, item_ids),
    )
    source = "history" if history is not None else "interactions" if interactions is not None else ""
    rows = interactions.table.num_rows if interactions is not None else 0
    return RecsysFiles(data, rows, without_list, source, catalog is not None, user_ids, item_ids)


@dataclass(frozen=True)
class _Catalog:
    ids: pa.Array
    categories: IntArray | None


def _encode_items(files: list[_Rows], catalog: CsvTable | None) -> pa.Array:
    """The catalog's item ids, after giving each file its items' codes (`_Rows.items`): the catalog
    file's items when given (each once, else an error), else every item of the files in order of
    first appearance. One hash table takes the catalog's items, then each file's; an item code at or
    beyond the catalog's size is then an item outside it (`_Rows.item_codes` refuses it)."""
    tables = ([catalog] if catalog is not None else []) + [f.table for f in files]
    values, parts = unify_codes([t.column("item") for t in tables])
    if catalog is None:
        for rows, part in zip(files, parts, strict=True):
            rows.table.refuse_empty("item", values, part)
            rows.items = part
        return values
    catalog.refuse_empty("item", values, parts[0])
    if len(parts[0]) and int(parts[0].max()) + 1 < catalog.num_rows:
        later, earlier = first_repeat(parts[0])
        first = catalog.line_numbers([earlier])[0]
        catalog.fail(later, f"item {catalog.text('item', later)!r} appears twice (first on line {first})")
    for rows, part in zip(files, parts[1:], strict=True):
        rows.items = part
        rows.vocabulary = values
    return values.slice(0, catalog.num_rows)


def _encode_users(files: list[_Rows]) -> pa.Array:
    """The distinct user ids of the files, the first file's first, after giving each file its users'
    codes (`_Rows.users`). An empty user is refused here in the first file, in the others where
    their users are read (so that the errors come in the order of the checks)."""
    values, codes = encode_runs_together([f.table.column("user") for f in files])
    for rows, part in zip(files, codes, strict=True):
        rows.users = part
    files[0].table.refuse_empty("user", values, files[0].users)
    return values


def category_codes(table: CsvTable) -> tuple[pa.Array, IntArray]:
    """The items file's categories: the distinct non-empty names in order of first appearance, and
    each row's code, -1 for an empty category. An item without a category is left out of the
    category-based metrics (coverage counts the others; similarity treats it as like nothing else),
    rather than refused or counted as a category of its own."""
    names, codes = encode_column(table.column("category"))
    empty = binary_length(names) == 0 if len(names) else np.zeros(0, dtype=bool)
    if not empty.any():
        return names, codes.astype(np.int64)
    renumbered = np.cumsum(~empty) - 1
    renumbered[empty] = -1
    return keep(names, from_numpy(~empty)), renumbered[codes].astype(np.int64)


class _Rows:
    """One file of (user, item) rows, its id columns encoded by `_encode_users` and `_encode_items`."""

    def __init__(self, table: CsvTable) -> None:
        self.table = table
        # Each row's user code, in the values `_encode_users` returns.
        self.users: IntArray = np.zeros(0, dtype=np.int32)
        # Each row's item code and the distinct items they index, set by `_encode_items`.
        self.items: IntArray = np.zeros(0, dtype=np.int32)
        self.vocabulary: pa.Array | None = None

    def item_codes(self, catalog: pa.Array) -> IntArray:
        """Each row's item code, refusing an empty item or one outside the catalog (an items file)."""
        codes = self.items
        if self.vocabulary is not None:
            self.table.refuse_empty("item", self.vocabulary, codes)
            unknown = np.flatnonzero(codes >= len(catalog))
            if unknown.size:
                row = int(unknown[0])
                self.table.fail(row, f"item {self.table.text('item', row)!r} is not in the catalog")
        return codes


def _read_rows(path: PathLike, schema: CsvSchema) -> _Rows:
    return _Rows(read_csv(path, schema))


def _lists(recs: _Rows, catalog: pa.Array, n_users: int, k: int | None) -> RecommendationLists:
    table = recs.table
    ranks = to_numpy(table.column("rank"))
    try:
        return RecommendationLists.from_ranked(
            recs.users,
            recs.item_codes(catalog),
            ranks,
            n_users=n_users,
            n_items=len(catalog),
            k=k,
        )
    except RepeatedEntryError as exc:
        first = table.line_numbers([exc.first_row])[0]
        what = f"item {table.text('item', exc.row)!r}" if exc.kind == "item" else f"rank {ranks[exc.row]}"
        table.fail(
            exc.row,
            f"{what} appears twice in the list of user {table.text('user', exc.row)!r} (first on line {first})",
        )


def _most_popular(counts: IntArray, k: int, item_ids: pa.Array) -> IntArray:
    """The codes of the k items with the most interactions (`counts`), ties broken by item id:
    codes follow the files' row order, ids do not, so the baseline (and serendipity_baseline) cannot
    depend on that order."""
    k = min(k, counts.size)
    if k == 0:
        return np.zeros(0, dtype=np.int64)
    # The k-th largest count, from a tally of the counts (a partition of a million counts, most of
    # them equal, took a sixth of a second).
    at_least = np.cumsum(np.bincount(counts)[::-1])  # at_least[j]: items with a count >= max - j
    kth = counts.max() - int(np.searchsorted(at_least, k))
    candidates = np.flatnonzero(counts >= kth)
    ids = take(item_ids, from_numpy(candidates))
    popularity = counts[candidates].astype(np.float64)
    table = pa.Table.from_arrays([from_numpy(popularity), ids], names=["popularity", "id"])
    order = sort_indices(table, [("popularity", "descending"), ("id", "ascending")])
    return candidates[order[:k]]


def _pairs(users: IntArray, items: IntArray, n_users: int, n_items: int) -> Interactions:
    known = users >= 0
    return Interactions.from_codes(users[known], items[known], n_users=n_users, n_items=n_items)
