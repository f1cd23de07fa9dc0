"""Dense retrieval: batched, chunked cosine top-k against a brute-force numpy reference."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from evalcore.embedding_retrieval import cosine_top_k, embedding_evaluate, embedding_run, resolve_device
from evalcore.retrieval import Qrels, Run, evaluate


def brute_force(queries: np.ndarray, corpus: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    q = queries / np.maximum(np.linalg.norm(queries, axis=1, keepdims=True), 1e-12)
    c = corpus / np.maximum(np.linalg.norm(corpus, axis=1, keepdims=True), 1e-12)
    sims = q @ c.T
    index = np.argsort(-sims, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(sims, index, axis=1), index


@pytest.fixture
def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(5)
    return rng.normal(size=(37, 16)), rng.normal(size=(501, 16))


class TestCosineTopK:
    def test_it_matches_brute_force(self, data) -> None:
        queries, corpus = data
        scores, index = cosine_top_k(queries, corpus, 10, device="cpu", dtype=torch.float64)
        expected_scores, expected_index = brute_force(queries, corpus, 10)
        np.testing.assert_array_equal(index, expected_index)
        np.testing.assert_allclose(scores, expected_scores, atol=1e-12)

    @pytest.mark.parametrize(("batch", "chunk"), [(1, 7), (5, 64), (16, 10_000), (100, 3)])
    def test_it_gives_the_same_ranking_whatever_the_batch_and_chunk_sizes(self, data, batch, chunk) -> None:
        queries, corpus = data
        whole = cosine_top_k(queries, corpus, 25, device="cpu")
        chunked = cosine_top_k(
            queries, corpus, 25, query_batch_size=batch, corpus_chunk_size=chunk, device="cpu"
        )
        np.testing.assert_array_equal(chunked[1], whole[1])
        np.testing.assert_allclose(chunked[0], whole[0], atol=1e-6)

    def test_it_caps_k_at_the_corpus_size_and_handles_zero_vectors(self) -> None:
        corpus = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 2.0]])
        scores, index = cosine_top_k(np.array([[3.0, 0.0]]), corpus, 10, device="cpu")
        assert index[0, 0] == 0 and sorted(index[0].tolist()) == [0, 1, 2]
        np.testing.assert_allclose(scores, [[1.0, 0.0, 0.0]])

    def test_it_rejects_mismatched_dimensions(self) -> None:
        with pytest.raises(ValueError, match="dimension"):
            cosine_top_k(np.ones((2, 3)), np.ones((4, 5)), 2, device="cpu")

    def test_it_defaults_to_cuda_when_available(self) -> None:
        assert resolve_device().type == ("cuda" if torch.cuda.is_available() else "cpu")
        assert resolve_device("cpu").type == "cpu"

    @pytest.mark.gpu
    def test_it_agrees_between_cpu_and_cuda(self, data) -> None:
        queries, corpus = data
        cpu = cosine_top_k(queries, corpus, 10, device="cpu")
        gpu = cosine_top_k(queries, corpus, 10, device="cuda")
        np.testing.assert_array_equal(cpu[1], gpu[1])
        np.testing.assert_allclose(cpu[0], gpu[0], atol=1e-5)


class TestEmbeddingRun:
    def test_it_builds_a_run_the_measures_can_score(self, data) -> None:
        queries, corpus = data
        qids = [f"q{i}" for i in range(len(queries))]
        docs = [f"doc{i}" for i in range(len(corpus))]
        run = embedding_run(queries, corpus, query_ids=qids, corpus_ids=docs, k=20, device="cpu")
        assert isinstance(run, Run) and len(run) == len(queries) * 20
        _, index = brute_force(queries, corpus, 20)
        expected = {q: [docs[j] for j in index[i]] for i, q in enumerate(qids)}
        ranked = {q: [d for d, _ in sorted(r.items(), key=lambda x: -x[1])] for q, r in run.to_dict().items()}
        assert ranked == expected
        qrels = Qrels.from_dict({q: {expected[q][2]: 1, docs[0]: 0} for q in qids})
        result = embedding_evaluate(
            queries, corpus, qrels, ["RR", "P@5"], query_ids=qids, corpus_ids=docs, k=20, device="cpu"
        )
        assert result.aggregate["RR"] == pytest.approx(1 / 3)
        assert result.aggregate == evaluate(qrels, run, ["RR", "P@5"]).aggregate

    def test_it_needs_one_id_per_embedding(self, data) -> None:
        queries, corpus = data
        with pytest.raises(ValueError, match="one id per embedding"):
            embedding_run(queries, corpus, query_ids=["q"], corpus_ids=[], k=3)
