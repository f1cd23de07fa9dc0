"""Dense retrieval by cosine similarity, as a `Run` the retrieval measures can score.

`cosine_top_k` never holds the full queries x corpus similarity matrix: it walks the corpus in chunks
(each normalised and moved to the device once) and the queries in batches, keeping a running top-k
per query that each chunk's own top-k is merged into. Peak memory is one batch x chunk block plus
the queries x k result.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import torch

from evalcore.retrieval import Qrels, RetrievalResult, Run, evaluate

__all__ = ["cosine_top_k", "embedding_evaluate", "embedding_run", "resolve_device"]

_EPS = 1e-12


def resolve_device(device: str | torch.device | None = None) -> torch.device:
    """The requested device, or CUDA when available and the CPU otherwise."""
    if device is not None:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _as_tensor(values: np.ndarray | torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    tensor = values if isinstance(values, torch.Tensor) else torch.from_numpy(np.asarray(values))
    if tensor.ndim != 2:
        raise ValueError("embeddings must be a 2-d (n, dim) array")
    return tensor.to(dtype=dtype)


def _normalised(block: torch.Tensor) -> torch.Tensor:
    return block / block.norm(dim=1, keepdim=True).clamp_min(_EPS)


def cosine_top_k(
    queries: np.ndarray | torch.Tensor,
    corpus: np.ndarray | torch.Tensor,
    k: int,
    *,
    query_batch_size: int = 1024,
    corpus_chunk_size: int = 262_144,
    device: str | torch.device | None = None,
    dtype: torch.dtype = torch.float32,
) -> tuple[np.ndarray, np.ndarray]:
    """(scores, indices), each (n_queries, min(k, n_corpus)), best first, by cosine similarity.

    Zero vectors get similarity 0. The result does not depend on the batch or chunk sizes, up to
    floating-point rounding of the dot products.
    """
    dev = resolve_device(device)
    q = _as_tensor(queries, dtype)
    c = _as_tensor(corpus, dtype)
    if q.shape[1] != c.shape[1]:
        raise ValueError(f"queries have dimension {q.shape[1]} but the corpus has {c.shape[1]}")
    if query_batch_size < 1 or corpus_chunk_size < 1:
        raise ValueError("batch and chunk sizes must be positive")
    k = min(int(k), c.shape[0])
    n_queries = q.shape[0]
    best_scores = torch.full((n_queries, k), -torch.inf, dtype=dtype, device=dev)
    best_index = torch.zeros((n_queries, k), dtype=torch.int64, device=dev)
    if k == 0 or n_queries == 0:
        return best_scores.cpu().numpy(), best_index.cpu().numpy()
    with torch.inference_mode():
        for lo in range(0, c.shape[0], corpus_chunk_size):
            chunk = _normalised(c[lo : lo + corpus_chunk_size].to(dev))
            take = min(k, chunk.shape[0])
            for qlo in range(0, n_queries, query_batch_size):
                rows = slice(qlo, qlo + query_batch_size)
                batch = _normalised(q[rows].to(dev))
                scores, index = torch.topk(batch @ chunk.T, take, dim=1)
                merged_scores = torch.cat([best_scores[rows], scores], dim=1)
                merged_index = torch.cat([best_index[rows], index + lo], dim=1)
                top, where = torch.topk(merged_scores, k, dim=1)
                best_scores[rows] = top
                best_index[rows] = torch.gather(merged_index, 1, where)
    return best_scores.cpu().numpy(), best_index.cpu().numpy()


def embedding_run(
    queries: np.ndarray | torch.Tensor,
    corpus: np.ndarray | torch.Tensor,
    *,
    query_ids: Sequence[str],
    corpus_ids: Sequence[str],
    k: int = 1000,
    query_batch_size: int = 1024,
    corpus_chunk_size: int = 262_144,
    device: str | torch.device | None = None,
    dtype: torch.dtype = torch.float32,
) -> Run:
    """The top-k documents of every query by cosine similarity, as a Run (score = cosine)."""
    if len(query_ids) != len(queries) or len(corpus_ids) != len(corpus):
        raise ValueError("there must be one id per embedding")
    scores, index = cosine_top_k(
        queries,
        corpus,
        k,
        query_batch_size=query_batch_size,
        corpus_chunk_size=corpus_chunk_size,
        device=device,
        dtype=dtype,
    )
    width = scores.shape[1]
    ids = pa.array([str(d) for d in corpus_ids], type=pa.string())
    docnos = ids.take(pa.array(index.reshape(-1)))
    codes = np.repeat(np.arange(len(query_ids), dtype=np.int32), width)
    return Run.from_codes([str(q) for q in query_ids], codes, docnos, scores.reshape(-1).astype(np.float64))


def embedding_evaluate(
    queries: np.ndarray | torch.Tensor,
    corpus: np.ndarray | torch.Tensor,
    qrels: Qrels,
    measures: Sequence[str] | None = None,
    *,
    query_ids: Sequence[str],
    corpus_ids: Sequence[str],
    k: int = 1000,
    device: str | torch.device | None = None,
    rel_level: int = 1,
) -> RetrievalResult:
    """Retrieve by cosine similarity, then score the ranking against `qrels` like any run."""
    run = embedding_run(queries, corpus, query_ids=query_ids, corpus_ids=corpus_ids, k=k, device=device)
    return evaluate(qrels, run, measures, rel_level=rel_level)
