"""evalcore.clicks: the readers, and the click models against hand-worked logs, a brute-force posterior
and logs simulated from known parameters."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from evalcore.clicks import (
    ClickLog,
    ClickModelParams,
    dbn_em_step,
    fit,
    pbm_em_step,
    read_click_log,
    simulate_log,
)
from evalcore.clicks._files import (
    _JSONL_SCHEMA,
    _UBI_SCHEMA,
    _arrow_json,
    _read_jsonl_slowly,
    _read_ubi_slowly,
    _ubi_columns,
)
from evalcore.clicks._models import _Grid, _Pairs
from evalcore.errors import FormatError

HEADER = "session,query,doc,position,clicked"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def log_of(rows: list[tuple[str, str, str, int, int]]) -> ClickLog:
    """A log from (session, query, doc, position, clicked) tuples."""
    ids: list[dict[str, int]] = [{}, {}, {}]
    codes = [[ids[k].setdefault(str(row[k]), len(ids[k])) for row in rows] for k in range(3)]
    return ClickLog.from_codes(
        codes[0], codes[1], codes[2], [r[3] for r in rows], [bool(r[4]) for r in rows],
        sessions=tuple(ids[0]), queries=tuple(ids[1]), docs=tuple(ids[2]),
    )  # fmt: skip


def by_pair(judgments, values) -> dict[tuple[str, str], float]:  # type: ignore[no-untyped-def]
    return {
        (judgments.queries[q], judgments.docs[d]): float(v)
        for q, d, v in zip(judgments.pair_query, judgments.pair_doc, values, strict=True)
    }


# --- COEC -------------------------------------------------------------------------------------------


def test_it_computes_coec_by_hand() -> None:
    log = log_of([
        ("s1", "q", "a", 1, 1), ("s1", "q", "b", 2, 0),
        ("s2", "q", "b", 1, 1), ("s2", "q", "a", 2, 1),
        ("s3", "q", "a", 1, 0), ("s3", "q", "b", 2, 0),
    ])  # fmt: skip
    judged = fit(log, ClickModelParams("coec", min_impressions=1))
    # ctr_1 = 2/3, ctr_2 = 1/3; a: 2 clicks over 2/3 + 1/3 + 2/3; b: 1 click over 1/3 + 2/3 + 1/3.
    assert judged.positions["ctr"] == pytest.approx([2 / 3, 1 / 3])
    relevance = by_pair(judged, judged.relevance)
    assert relevance[("q", "a")] == pytest.approx(2 / (5 / 3))
    assert relevance[("q", "b")] == pytest.approx(1 / (4 / 3))
    # 1.2 and 0.75 against the boundaries 0.5, 1, 1.5 and 2.5.
    assert by_pair(judged, judged.grade) == {("q", "a"): 2, ("q", "b"): 1}
    assert by_pair(judged, judged.impressions) == {("q", "a"): 3, ("q", "b"): 3}
    assert by_pair(judged, judged.clicks) == {("q", "a"): 2, ("q", "b"): 1}


def test_it_gives_tied_results_the_same_grade_and_an_unclicked_log_grade_0() -> None:
    log = log_of(
        [("s1", "q", "a", 1, 0), ("s1", "q", "b", 2, 0), ("s2", "q", "a", 2, 0), ("s2", "q", "b", 1, 0)]
    )
    for model in ("coec", "pbm", "dbn"):
        judged = fit(log, ClickModelParams(model, min_impressions=1))  # type: ignore[arg-type]
        assert judged.grade.tolist() == [0, 0]
        assert judged.relevance[0] == pytest.approx(judged.relevance[1])
        assert np.isfinite(judged.relevance).all()


def test_it_withholds_judgments_under_min_impressions_and_uses_given_thresholds() -> None:
    log = log_of([("s1", "q", "a", 1, 1), ("s1", "q", "b", 2, 0), ("s2", "q", "a", 1, 1)])
    judged = fit(log, ClickModelParams("coec", min_impressions=2, thresholds=(0.1, 0.2, 0.3, 1.5)))
    assert by_pair(judged, judged.grade) == {("q", "a"): 3, ("q", "b"): -1}
    assert judged.qrels_lines() == ["q 0 a 3"]
    assert judged.grade_counts() == {0: 0, 1: 0, 2: 0, 3: 1, 4: 0}


def test_it_fits_a_log_of_one_session() -> None:
    log = log_of([("s1", "q", "a", 1, 1), ("s1", "q", "b", 2, 0), ("s1", "q", "c", 3, 0)])
    for model in ("coec", "pbm", "dbn"):
        judged = fit(log, ClickModelParams(model, min_impressions=1))  # type: ignore[arg-type]
        assert judged.sessions == 1 and judged.rows == 3
        assert np.isfinite(judged.relevance).all() and (judged.grade >= 0).all()


def test_it_refuses_bad_parameters() -> None:
    with pytest.raises(ValueError, match="unknown click model"):
        ClickModelParams("ubm")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="four increasing"):
        ClickModelParams("pbm", thresholds=(0.1, 0.3, 0.2, 0.7))
    with pytest.raises(ValueError, match="min_impressions"):
        ClickModelParams("pbm", min_impressions=0)


def test_it_drops_short_clicks_with_min_dwell(tmp_path: Path) -> None:
    path = write(tmp_path, "d.csv", f"{HEADER},dwell\ns1,q,a,1,1,5\ns1,q,b,2,1,60\ns2,q,a,1,1,\n")
    with pytest.raises(FormatError, match=r"d\.csv:4: dwell '' is not a number"):
        read_click_log(path)
    path = write(tmp_path, "d.csv", f"{HEADER},dwell\ns1,q,a,1,1,5\ns1,q,b,2,1,60\ns2,q,a,1,1,45\n")
    judged = fit(read_click_log(path), ClickModelParams("coec", min_impressions=1, min_dwell=30))
    assert by_pair(judged, judged.clicks) == {("q", "a"): 1, ("q", "b"): 1}


# --- PBM ---------------------------------------------------------------------------------------------


def test_it_takes_one_pbm_em_step_as_worked_by_hand() -> None:
    pair = np.array([0, 0, 1, 1])
    rank = np.array([0, 1, 0, 1])
    clicked = np.array([True, False, False, True])
    alpha, gamma = np.array([0.5, 0.4]), np.array([0.9, 0.5])
    new_alpha, new_gamma = pbm_em_step(pair, rank, clicked, alpha, gamma)
    # Unclicked impressions: P(A=1|C=0) = a(1-g)/(1-ag), P(E=1|C=0) = g(1-a)/(1-ag).
    a_01 = 0.5 * 0.5 / (1 - 0.25)  # pair 0 at rank 1 = 1/3
    a_10 = 0.4 * 0.1 / (1 - 0.36)  # pair 1 at rank 0 = 0.0625
    e_01 = 0.5 * 0.5 / (1 - 0.25)  # 1/3
    e_10 = 0.9 * 0.6 / (1 - 0.36)  # 0.84375
    assert new_alpha == pytest.approx([(1 + a_01) / 2, (a_10 + 1) / 2])
    assert new_gamma == pytest.approx([(1 + e_10) / 2, (e_01 + 1) / 2])


def test_it_recovers_pbm_parameters_from_a_simulated_log() -> None:
    sim = simulate_log(model="pbm", sessions=30_000, queries=10, docs_per_query=10, depth=10, seed=3)
    judged = fit(sim.log, ClickModelParams("pbm", tolerance=1e-6, max_iterations=500))
    assert judged.converged
    assert judged.positions["examination"] == pytest.approx(sim.examination.tolist(), abs=0.03)
    error = np.abs(judged.relevance - sim.attractiveness[judged.pair_doc])
    assert error.mean() < 0.02 and error.max() < 0.08


# --- DBN ---------------------------------------------------------------------------------------------


def brute_force_dbn_step(
    sessions: list[list[tuple[int, int]]], a: np.ndarray, s: np.ndarray, gamma: float
) -> tuple[np.ndarray, np.ndarray, float]:
    """The EM update by enumerating every hidden state (A, S, continuation coin) of each session."""
    a_num, a_den = np.zeros(a.size), np.zeros(a.size)
    s_num, s_den = np.zeros(s.size), np.zeros(s.size)
    g_num = g_den = 0.0
    for session in sessions:
        k = len(session)
        post_a, post_s = np.zeros(k), np.zeros(k)
        total = went = stayed = 0.0
        for bits in itertools.product((0, 1), repeat=3 * k):
            attracted, satisfied, coin = bits[:k], bits[k : 2 * k], bits[2 * k :]
            p, examined, go, stay = 1.0, 1, 0.0, 0.0
            ok = True
            for r, (u, c) in enumerate(session):
                click = examined * attracted[r]
                if click != c:
                    ok = False
                    break
                p *= a[u] if attracted[r] else 1 - a[u]
                p *= s[u] if satisfied[r] else 1 - s[u]
                p *= gamma if coin[r] else 1 - gamma
                left = examined * (1 - click * satisfied[r])
                if r + 1 < k:
                    stay += left * coin[r]
                    go += left
                examined = left * coin[r]
            if not ok:
                continue
            total += p
            post_a += p * np.array(attracted)
            post_s += p * np.array([c * satisfied[r] for r, (_, c) in enumerate(session)])
            went += p * go
            stayed += p * stay
        for r, (u, c) in enumerate(session):
            a_num[u] += post_a[r] / total
            a_den[u] += 1
            if c:
                s_num[u] += post_s[r] / total
                s_den[u] += 1
        g_num += stayed / total
        g_den += went / total
    new_s = np.divide(s_num, s_den, out=s.copy(), where=s_den > 0)
    return a_num / a_den, new_s, g_num / g_den


def test_it_takes_one_dbn_em_step_as_the_brute_force_posterior() -> None:
    rows = [
        ("s1", "q", "a", 1, 0), ("s1", "q", "b", 2, 1), ("s1", "q", "c", 3, 0),
        ("s2", "q", "c", 1, 1), ("s2", "q", "a", 2, 1), ("s2", "q", "b", 3, 0),
        ("s3", "q", "b", 1, 0), ("s3", "q", "c", 2, 0),
        ("s4", "q", "a", 1, 1),
    ]  # fmt: skip
    log = log_of(rows)
    pairs = _Pairs.of(log)
    a, s, gamma = np.array([0.6, 0.3, 0.45]), np.array([0.7, 0.2, 0.5]), 0.8
    doc_pair = {log.docs[int(d)]: p for p, d in enumerate(pairs.pair_doc)}
    sessions: dict[str, list[tuple[int, int]]] = {}
    for session, _, doc, _, click in rows:
        sessions.setdefault(session, []).append((doc_pair[doc], click))
    expected = brute_force_dbn_step(list(sessions.values()), a, s, gamma)
    got = dbn_em_step(_Grid.of(log, pairs, log.clicked), a, s, gamma)
    assert got[0] == pytest.approx(expected[0])
    assert got[1] == pytest.approx(expected[1])
    assert got[2] == pytest.approx(expected[2])


def test_it_recovers_dbn_parameters_from_a_simulated_log() -> None:
    sim = simulate_log(
        model="dbn", sessions=30_000, queries=10, docs_per_query=10, depth=10, continuation=0.7, seed=5
    )
    judged = fit(sim.log, ClickModelParams("dbn", tolerance=1e-5, max_iterations=300))
    assert judged.positions["continuation"][0] == pytest.approx(0.7, abs=0.03)
    attract = judged.extra["attractiveness"]
    truth_a = sim.attractiveness[judged.pair_doc]
    assert np.abs(attract - truth_a).mean() < 0.03
    # Satisfaction is seen only through clicks: compare where there were enough of them.
    many = judged.clicks >= 200
    assert many.sum() >= 30
    truth_s = sim.satisfaction[judged.pair_doc]
    assert np.abs(judged.extra["satisfaction"] - truth_s)[many].mean() < 0.05
    relevance_truth = truth_a * truth_s
    assert np.corrcoef(judged.relevance, relevance_truth)[0, 1] > 0.95


def test_it_ranks_documents_by_attractiveness_with_coec_on_a_pbm_log() -> None:
    sim = simulate_log(model="pbm", sessions=20_000, queries=5, docs_per_query=10, depth=10, seed=1)
    judged = fit(sim.log, ClickModelParams("coec"))
    assert np.corrcoef(judged.relevance, sim.attractiveness[judged.pair_doc])[0, 1] > 0.98


# --- readers ---------------------------------------------------------------------------------------------


def test_it_reads_csv_and_jsonl_to_the_same_log(tmp_path: Path) -> None:
    csv = write(tmp_path, "log.csv", f"{HEADER},dwell\ns1,q1,d1,1,1,12.5\ns1,q1,d2,2,0,\ns2,q2,d1,1,true,3\n")
    with pytest.raises(FormatError):
        read_click_log(csv)  # an empty dwell is not a number in CSV
    csv = write(tmp_path, "log.csv", f"{HEADER}\ns1,q1,d1,1,1\ns1,q1,d2,2,0\ns2,q2,d1,1,true\n")
    records = [
        {"session": "s1", "query": "q1", "doc": "d1", "position": 1, "clicked": True},
        {"session": "s1", "query": "q1", "doc": "d2", "position": 2, "clicked": 0},
        {"session": "s2", "query": "q2", "doc": "d1", "position": 1, "clicked": 1},
    ]
    jsonl = write(tmp_path, "log.jsonl", "\n".join(json.dumps(r) for r in records) + "\n")
    for log in (read_click_log(csv), read_click_log(jsonl, "jsonl")):
        assert log.num_rows == 3
        assert [log.sessions[c] for c in log.session] == ["s1", "s1", "s2"]
        assert [log.docs[c] for c in log.doc] == ["d1", "d2", "d1"]
        assert log.position.tolist() == [1, 2, 1] and log.clicked.tolist() == [True, False, True]


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (f"{HEADER}\ns1,q,a,1,1\ns1,q,b,zero,0\n", r":3: position 'zero' is not an integer"),
        (f"{HEADER}\ns1,q,a,1,1\ns1,q,b,2,2\n", r":3: clicked '2' is not 0 or 1"),
        (f"{HEADER}\ns1,q,a,1,1\ns1,q,b,1,0\n", r":3: session 's1' shows position 1 twice"),
        (f"{HEADER}\ns1,q,a,1,1\ns1,q,a,2,0\n", r":3: session 's1' shows document 'a' twice"),
        (f"{HEADER}\ns1,q,a,1,1\n\ns1,r,b,2,0\n", r":4: session 's1' shows a second query"),
        (f"{HEADER}\ns1,q,a,0,1\n", r":2: position 0 is below 1"),
        (f"{HEADER}\ns1,q,,1,1\n", r":2: empty doc"),
        (f"{HEADER}\ns1,q,a,1\n", r":2: expected 5 columns"),
        ("session,query,doc,position\n", r":1: missing column 'clicked'"),
        (f"{HEADER}\n", r"log\.csv: the log holds no impressions"),
    ],
)
def test_it_refuses_a_bad_csv_line(tmp_path: Path, text: str, where: str) -> None:
    with pytest.raises(FormatError, match=r"log\.csv" + where if where.startswith(":") else where):
        read_click_log(write(tmp_path, "log.csv", text))


@pytest.mark.parametrize(
    ("lines", "where"),
    [
        (['{"session":"s","query":"q","doc":"a","position":1,"clicked":1}', "{oops"], ":2: "),
        (['{"session":"s","query":"q","doc":"a","position":1}'], ':1: missing "clicked"'),
        (['{"session":"s","query":"q","doc":"a","position":1.5,"clicked":1}'], ':1: "position" must be an integer'),
        (['{"session":"s","query":"q","doc":"a","position":1,"clicked":"yes"}'], ':1: "clicked" must be'),
        (['{"session":"s","query":"q","doc":"a","position":1,"clicked":1,"rank":3}'], ':1: unknown key "rank"'),
        (
            ['{"session":"s","query":"q","doc":"a","position":1,"clicked":1}', "",
             '{"session":"s","query":"q","doc":"a","position":2,"clicked":0}'],
            ":3: session 's' shows document 'a' twice",
        ),
    ],
)  # fmt: skip
def test_it_refuses_a_bad_jsonl_line(tmp_path: Path, lines: list[str], where: str) -> None:
    with pytest.raises(FormatError, match=r"log\.jsonl" + where):
        read_click_log(write(tmp_path, "log.jsonl", "\n".join(lines) + "\n"), "jsonl")


def ubi_event(action: str, query_id: str, query: str | None, doc: str | int, ordinal: int | None) -> str:
    position = {} if ordinal is None else {"ordinal": ordinal}
    event: dict[str, object] = {
        "action_name": action, "query_id": query_id, "client_id": "c1", "timestamp": "2025-02-18T10:00:00Z",
        "event_attributes": {"object": {"object_id": doc, "object_id_field": "sku"}, "position": position},
    }  # fmt: skip
    if query is not None:
        event["user_query"] = query
    return json.dumps(event)


def test_it_reads_ubi_events(tmp_path: Path) -> None:
    lines = [
        json.dumps({"action_name": "on_search", "query_id": "u1", "timestamp": "2025-02-18T10:00:00Z"}),
        ubi_event("impression", "u1", "laptop", "p1", 1),
        ubi_event("impression", "u1", "laptop", "p2", 2),
        ubi_event("impression", "u1", "laptop", "p3", 3),
        ubi_event("click", "u1", "laptop", "p2", 2),
        ubi_event("add_to_cart", "u1", "laptop", "p2", 2),
        ubi_event("click", "u1", "laptop", "p2", 2),  # a second click on the same result
        ubi_event("impression", "u2", "laptop", "p2", 1),
        ubi_event("click_through", "u3", "phone", "p9", 4),  # a click with no impression event
    ]
    log = read_click_log(write(tmp_path, "ubi.jsonl", "\n".join(lines) + "\n"), "ubi")
    rows = sorted(
        (log.sessions[s], log.queries[q], log.docs[d], int(p), bool(c))
        for s, q, d, p, c in zip(log.session, log.query, log.doc, log.position, log.clicked, strict=True)
    )
    assert rows == [
        ("u1", "laptop", "p1", 1, False),
        ("u1", "laptop", "p2", 2, True),
        ("u1", "laptop", "p3", 3, False),
        ("u2", "laptop", "p2", 1, False),
        ("u3", "phone", "p9", 4, True),
    ]


def test_it_reads_ubi_object_ids_given_as_integers(tmp_path: Path) -> None:
    lines = [ubi_event("impression", "u1", "q", 17, 1), ubi_event("click", "u1", "q", 17, 1)]
    log = read_click_log(write(tmp_path, "ubi.jsonl", "\n".join(lines) + "\n"), "ubi")
    assert list(log.docs) == ["17"] and log.clicked.tolist() == [True]


@pytest.mark.parametrize(
    ("event", "reason"),
    [
        (ubi_event("impression", "u1", None, "p2", 2), ':3: impression event: missing "user_query"'),
        (
            ubi_event("click", "u1", "laptop", "p2", None),
            ':3: click event: missing "event_attributes.position.ordinal"',
        ),
        (ubi_event("impression", "u1", "other", "p2", 2), ":3: session 'u1' shows a second query"),
    ],
)
def test_it_refuses_a_bad_ubi_event(tmp_path: Path, event: str, reason: str) -> None:
    lines = [json.dumps({"action_name": "login"}), ubi_event("impression", "u1", "laptop", "p1", 1), event]
    with pytest.raises(FormatError, match=r"ubi\.jsonl" + reason):
        read_click_log(write(tmp_path, "ubi.jsonl", "\n".join(lines) + "\n"), "ubi")


def rows_of(log: ClickLog) -> list[tuple[str, str, str, int, bool, float | None]]:
    dwell = (
        [None] * log.num_rows if log.dwell is None else [None if np.isnan(x) else float(x) for x in log.dwell]
    )
    return [
        (log.sessions[s], log.queries[q], log.docs[d], int(p), bool(c), w)
        for s, q, d, p, c, w in zip(
            log.session, log.query, log.doc, log.position, log.clicked, dwell, strict=True
        )
    ]


def test_it_reads_jsonl_and_ubi_with_arrow_as_the_line_by_line_readers_do(tmp_path: Path) -> None:
    """The Arrow path (taken here: no line needs the fallback) and the fallback give the same log."""
    records = [
        {"session": "s1", "query": "q1", "doc": "d1", "position": 1, "clicked": True, "dwell": 31.5},
        {"session": "s1", "query": "q1", "doc": "d2", "position": 2, "clicked": False, "dwell": None},
        {"session": "s2", "query": "q1", "doc": "d2", "position": 1, "clicked": True},
    ]
    jsonl = write(tmp_path, "log.jsonl", "\n".join(json.dumps(r) for r in records) + "\n\n")
    assert _arrow_json(str(jsonl), _JSONL_SCHEMA) is not None
    assert rows_of(read_click_log(jsonl, "jsonl")) == rows_of(_read_jsonl_slowly(str(jsonl)))
    assert rows_of(read_click_log(jsonl, "jsonl"))[:2] == [
        ("s1", "q1", "d1", 1, True, 31.5),
        ("s1", "q1", "d2", 2, False, None),
    ]
    lines = [
        json.dumps({"query_id": "u1", "message": "an event with no action_name"}),
        ubi_event("impression", "u1", "laptop", "p1", 1),
        ubi_event("impression", "u1", "laptop", "p2", 2),
        ubi_event("click", "u1", "laptop", "p2", 2),
        ubi_event("impression", "u2", "phone", "p3", 1),
    ]
    ubi = write(tmp_path, "ubi.jsonl", "\n".join(lines) + "\n")
    table = _arrow_json(str(ubi), _UBI_SCHEMA)
    assert table is not None and _ubi_columns(table) is not None
    assert rows_of(read_click_log(ubi, "ubi")) == rows_of(_read_ubi_slowly(str(ubi)))
    assert [row[4] for row in rows_of(read_click_log(ubi, "ubi"))] == [False, True, False]


def test_it_fits_an_empty_log_and_leaves_positions_never_shown_unestimated() -> None:
    empty = ClickLog.from_codes([], [], [], [], [], sessions=(), queries=(), docs=())
    for model in ("coec", "pbm", "dbn"):
        judged = fit(empty, ClickModelParams(model))  # type: ignore[arg-type]
        assert judged.qrels_lines() == [] and judged.grade_counts() == {g: 0 for g in range(5)}
    gap = log_of([("s1", "q", "a", 1, 1), ("s1", "q", "b", 3, 0), ("s2", "q", "b", 1, 0)])
    ctr = fit(gap, ClickModelParams("coec", min_impressions=1)).positions["ctr"]
    assert ctr[0] == 0.5 and np.isnan(ctr[1]) and ctr[2] == 0.0
    assert np.isnan(fit(gap, ClickModelParams("pbm", min_impressions=1)).positions["examination"][1])


@pytest.mark.parametrize("model", ["coec", "pbm", "dbn"])
def test_it_gives_the_same_judgments_whatever_the_row_order(model: str) -> None:
    log = simulate_log(model="dbn", sessions=2_000, queries=4, docs_per_query=8, depth=6, seed=9).log
    order = np.random.default_rng(0).permutation(log.num_rows)
    shuffled = ClickLog.from_codes(
        log.session[order], log.query[order], log.doc[order], log.position[order], log.clicked[order],
        sessions=log.sessions, queries=log.queries, docs=log.docs,
    )  # fmt: skip
    params = ClickModelParams(model, min_impressions=1)  # type: ignore[arg-type]
    first, second = fit(log, params), fit(shuffled, params)
    assert first.qrels_lines() == second.qrels_lines()
    assert second.relevance == pytest.approx(first.relevance, abs=1e-9)
    assert second.iterations == first.iterations


@pytest.mark.parametrize("value", ["-1", "inf"])
def test_it_refuses_a_negative_or_infinite_dwell(tmp_path: Path, value: str) -> None:
    with pytest.raises(FormatError, match=rf"log\.csv:3: dwell '{value}(\.0)?' is not a non-negative number"):
        read_click_log(write(tmp_path, "log.csv", f"{HEADER},dwell\ns1,q,a,1,1,3\ns1,q,b,2,1,{value}\n"))
    record = '{"session":"s1","query":"q","doc":"b","position":2,"clicked":1,"dwell":%s}' % (
        "-1" if value == "-1" else "1e999"
    )
    lines = ['{"session":"s1","query":"q","doc":"a","position":1,"clicked":1,"dwell":3}', record]
    with pytest.raises(FormatError, match=r'log\.jsonl:2: "dwell" must be a non-negative number'):
        read_click_log(write(tmp_path, "log.jsonl", "\n".join(lines) + "\n"), "jsonl")


def test_it_matches_loops_over_the_definitions_on_a_random_log() -> None:
    """COEC and one PBM EM step, vectorised, against plain loops over the impressions."""
    sim = simulate_log(model="pbm", sessions=300, queries=3, docs_per_query=6, depth=5, seed=11)
    log = sim.log
    rows = list(
        zip(log.query.tolist(), log.doc.tolist(), log.position.tolist(), log.clicked.tolist(), strict=True)
    )
    shown: dict[int, int] = {}
    hits: dict[int, int] = {}
    for _, _, r, c in rows:
        shown[r] = shown.get(r, 0) + 1
        hits[r] = hits.get(r, 0) + c
    observed: dict[tuple[int, int], float] = {}
    expected: dict[tuple[int, int], float] = {}
    for q, d, r, c in rows:
        observed[(q, d)] = observed.get((q, d), 0) + c
        expected[(q, d)] = expected.get((q, d), 0) + hits[r] / shown[r]
    judged = fit(log, ClickModelParams("coec", min_impressions=1))
    got = {
        (int(q), int(d)): float(v)
        for q, d, v in zip(judged.pair_query, judged.pair_doc, judged.relevance, strict=True)
    }
    assert got == pytest.approx({k: observed[k] / expected[k] for k in observed})

    pairs = _Pairs.of(log)
    rng = np.random.default_rng(1)
    alpha, gamma = rng.uniform(0.1, 0.9, pairs.size), rng.uniform(0.1, 0.9, 5)
    a_sum, a_n = np.zeros(pairs.size), np.zeros(pairs.size)
    g_sum, g_n = np.zeros(5), np.zeros(5)
    for u, (_, _, r, c) in zip(pairs.row_pair.tolist(), rows, strict=True):
        a, g = alpha[u], gamma[r - 1]
        a_sum[u] += 1.0 if c else a * (1 - g) / (1 - a * g)
        g_sum[r - 1] += 1.0 if c else g * (1 - a) / (1 - a * g)
        a_n[u] += 1
        g_n[r - 1] += 1
    new_alpha, new_gamma = pbm_em_step(pairs.row_pair, log.position - 1, log.clicked, alpha, gamma)
    assert new_alpha == pytest.approx(a_sum / a_n)
    assert new_gamma == pytest.approx(g_sum / g_n)
