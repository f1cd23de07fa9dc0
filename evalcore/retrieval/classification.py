"""Seed 002's classification measures: top-k accuracy on logits and weighted F1.

Both agree with scikit-learn (`top_k_accuracy_score`, `f1_score(average="weighted")`), ties included.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _numpy(values: Any) -> np.ndarray:
    if hasattr(values, "detach"):  # a torch tensor, on any device
        values = values.detach().cpu().numpy()
    return np.asarray(values)


def topk_accuracy(logits: Any, labels: Any, k: int) -> float:
    """Share of samples whose true class is among the k highest logits.

    Acc@k = (1/N) * sum_i [y_i in top_k(logits_i)]. Among tied logits the higher class index ranks
    first, as scikit-learn's `top_k_accuracy_score` orders them.

    >>> topk_accuracy([[0.5, 0.3, 0.1, 0.1], [0.1, 0.5, 0.3, 0.1], [0.2, 0.2, 0.4, 0.2]], [0, 0, 2], 1)
    0.6666666666666666
    """
    scores = _numpy(logits).astype(np.float64)
    y = _numpy(labels).astype(np.int64).reshape(-1)
    if scores.ndim != 2 or len(scores) != len(y):
        raise ValueError("logits must be (n_samples, n_classes) with one label per sample")
    if k < 1:
        raise ValueError("k must be at least 1")
    if not len(y):
        return 0.0
    if y.min() < 0 or y.max() >= scores.shape[1]:
        raise ValueError("labels must be class indices into the logits")
    own = scores[np.arange(len(y)), y][:, None]
    classes = np.arange(scores.shape[1])[None, :]
    ahead = (scores > own) | ((scores == own) & (classes > y[:, None]))
    return float(np.mean(ahead.sum(axis=1) < k))


def f1_weighted(y_true: Any, y_pred: Any) -> float:
    """F1 per class, averaged with weights equal to each class's support in `y_true`.

    F1_c = 2 * TP_c / (2 * TP_c + FP_c + FN_c) (0 when the class is never true nor predicted);
    weighted F1 = sum_c (N_c / N) * F1_c.

    >>> f1_weighted([0, 0, 1, 2], [0, 1, 1, 2])
    0.75
    """
    t, p = _numpy(y_true).reshape(-1), _numpy(y_pred).reshape(-1)
    if len(t) != len(p):
        raise ValueError("y_true and y_pred must have the same length")
    if not len(t):
        return 0.0
    _, codes = np.unique(np.concatenate([t, p]), return_inverse=True)
    codes = codes.reshape(-1)
    true_codes, pred_codes = codes[: len(t)], codes[len(t) :]
    n_classes = int(codes.max()) + 1
    support = np.bincount(true_codes, minlength=n_classes).astype(np.float64)
    predicted = np.bincount(pred_codes, minlength=n_classes).astype(np.float64)
    hits = np.bincount(true_codes[true_codes == pred_codes], minlength=n_classes).astype(np.float64)
    denominator = support + predicted
    f1 = np.zeros(n_classes)
    np.divide(2.0 * hits, denominator, out=f1, where=denominator > 0)
    return float(np.sum(f1 * support) / support.sum())
