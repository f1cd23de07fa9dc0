"""Document keys (`evalcore.retrieval.keys`): what they cost and what they preserve."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalcore.retrieval import Qrels, Run, evaluate
from evalcore.retrieval.keys import as_binary_chunks, docno_keys, exact_keys, ordered_keys
from tests.evalcore.test_retrieval import ALL_MEASURES, pytrec

ROOT = Path(__file__).resolve().parents[2]

# 150,000 judged and retrieved rows, one of whose ids is `long` bytes; the evaluation's peak memory
# (VmHWM) and its numbers, printed as JSON. The address space is capped at 3 GiB, so that a keying that
# pads every row to the longest id (112 GiB here) fails fast instead of taking the machine's memory.
_SCRIPT = textwrap.dedent(
    """
    import json, resource, sys
    cap = 3 << 30
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    import numpy as np
    from evalcore.retrieval import Qrels, Run, evaluate

    n, queries = 150_000, 500
    docs = [f"d{i}" for i in range(n)]
    docs[n // 2] = "x" * int(sys.argv[1])
    codes = np.arange(n) % queries
    qids = [f"q{i}" for i in range(queries)]
    rng = np.random.default_rng(0)
    qrels = Qrels.from_codes(qids, codes, docs, rng.integers(0, 3, n))
    run = Run.from_codes(qids, codes, docs, rng.random(n))
    result = evaluate(qrels, run, ["map", "ndcg", "P_10", "recip_rank"])
    peak = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM"))
    print(json.dumps({"aggregate": result.aggregate, "peak_kib": peak}))
    """
)


def _evaluate_in_child(long: int) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(long)], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


ids = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=30)


class TestKeyCost:
    def test_it_evaluates_a_100_kb_id_among_150_000_rows_in_little_more_memory(self) -> None:
        short = _evaluate_in_child(4)
        long = _evaluate_in_child(100_000)
        assert long["aggregate"] == short["aggregate"]
        # The id's own bytes, a few copies of them, and noise; padding asked for 112 GiB.
        assert long["peak_kib"] - short["peak_kib"] < 64 * 1024


class TestKeys:
    @given(st.lists(ids, min_size=1, max_size=40))
    @settings(max_examples=200, deadline=None)
    def test_it_gives_equal_keys_to_equal_ids_only(self, values: list[str]) -> None:
        chunks = as_binary_chunks(values)
        for exact in (False, True) if exact_keys(chunks) else (False,):
            keys = docno_keys(chunks, exact=exact).tolist()
            for i, a in enumerate(values):
                for j, b in enumerate(values):
                    assert (keys[i] == keys[j]) == (a == b), (exact, a, b)

    @given(st.lists(st.binary(max_size=8), min_size=1, max_size=40))
    @settings(max_examples=200, deadline=None)
    def test_it_orders_exact_keys_as_the_bytes(self, values: list[bytes]) -> None:
        # Exact keys zero-pad, so ids ending in NUL bytes compare as the bytes without them, as strcmp.
        values = [v.rstrip(b"\x00") for v in values]
        keys = ordered_keys(docno_keys(as_binary_chunks(pa.array(values, pa.binary())), exact=True))
        assert [values[i] for i in np.argsort(keys, kind="stable")] == sorted(values)

    def test_it_keys_an_id_the_same_whatever_the_other_ids_and_chunks(self) -> None:
        alone = docno_keys(as_binary_chunks(["clueweb09-en0000-00-00001", "a" * 9]), exact=False)
        chunks = pa.chunked_array([pa.array(["x" * 1000, "clueweb09-en0000-00-00001"]), pa.array(["a" * 9])])
        mixed = docno_keys(as_binary_chunks(chunks), exact=False)
        assert mixed[1:].tolist() == alone.tolist()

    @given(
        st.lists(ids.filter(bool), min_size=1, max_size=12, unique=True),
        st.data(),
    )
    @settings(max_examples=100, deadline=None)
    def test_it_evaluates_ids_of_any_length_as_trec_eval(self, docs: list[str], data: st.DataObject) -> None:
        docs = [d.replace(" ", "_") for d in docs if not any(c.isspace() for c in d)] or ["a"]
        docs = list(dict.fromkeys(docs))
        judged = data.draw(st.dictionaries(st.sampled_from(docs), st.integers(0, 3), min_size=1))
        ranked = data.draw(
            st.dictionaries(st.sampled_from(docs), st.sampled_from([0.0, 1.0, 2.5]), min_size=1)
        )
        qrels, run = {"q": judged}, {"q": ranked}
        reference = pytrec(qrels, run, 1)["q"]
        result = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), ALL_MEASURES)
        labels = {spec.label: spec.key for spec in result.specs}
        for key, value in reference.items():
            assert result.per_query["q"][labels[key]] == pytest.approx(value, abs=1e-9), key
