"""CPU against CUDA in one process: the embedding monitor suite (ROWS x 768 against ROWS x 768) and
embedding retrieval (10k queries against CORPUS x 768, top 100), the same inputs on both devices, with the
largest difference between their values. Needs a CUDA device (else it times the CPU only).

    ROWS=100000 CORPUS=500000 python -m benchmarks.embeddings_gpu
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch

from evalcore.embedding_retrieval import cosine_top_k
from evalcore.embeddings import MonitorParams, evaluate_embeddings

DIM = 768


def timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    """fn's value, wall seconds and this process's CPU seconds (the device synchronised)."""
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return value, round(time.perf_counter() - wall, 3), round(time.process_time() - cpu, 3)


def main() -> dict[str, Any]:
    devices = ["cuda", "cpu"] if torch.cuda.is_available() else ["cpu"]
    out: dict[str, Any] = {
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "cpu_threads": torch.get_num_threads(),
    }
    rng = np.random.default_rng(0)
    rows = int(os.environ.get("ROWS", "100000"))
    reference = rng.normal(size=(rows, DIM)).astype(np.float32)
    current = (rng.normal(size=(rows, DIM)) + 0.02).astype(np.float32)
    params = MonitorParams()
    sections: dict[str, dict[str, dict[str, Any]]] = {}
    out["suite"] = {}
    for device in devices:
        if device == "cuda":  # the first CUDA call pays for the context and the kernels' loading
            evaluate_embeddings(reference[:2000], current[:2000], params=params, device="cuda")
        report, wall, cpu = timed(
            partial(evaluate_embeddings, reference, current, params=params, device=device)
        )
        sections[device] = report.sections()
        out["suite"][device] = {"wall_s": wall, "cpu_s": cpu}
    if len(devices) == 2:
        diffs = {
            f"{section}.{name}": abs(value - sections["cuda"][section][name]) / max(abs(value), 1e-12)
            for section, values in sections["cpu"].items()
            for name, value in values.items()
            if isinstance(value, float) and isinstance(sections["cuda"][section][name], float)
        }
        out["suite_max_rel_diff"] = max(diffs.values(), default=None)
    queries = rng.normal(size=(10_000, DIM)).astype(np.float32)
    corpus = rng.normal(size=(int(os.environ.get("CORPUS", "500000")), DIM)).astype(np.float32)
    indices = {}
    out["retrieval"] = {}
    for device in devices:
        (_, index), wall, cpu = timed(partial(cosine_top_k, queries, corpus, 100, device=device))
        indices[device] = index
        out["retrieval"][device] = {"wall_s": wall, "cpu_s": cpu}
    if len(devices) == 2:
        out["retrieval_same_top100_share"] = float((indices["cuda"] == indices["cpu"]).mean())
    return out


if __name__ == "__main__":
    result = main()
    text = json.dumps(result, indent=1, default=str)
    print(text)
    if os.environ.get("OUT"):
        (Path(os.environ["OUT"]) / "gpu_bench.json").write_text(text)
