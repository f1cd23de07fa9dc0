"""Device choice and tensor plumbing shared by the torch kernels."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from evalcore.embeddings._validation import EmbeddingInputError

#: The `device` option: "auto" (CUDA when available, else the CPU), "cpu", "cuda", or a torch device.
Device = str | torch.device | None


def resolve_device(device: Device = "auto") -> torch.device:
    """The requested device; "auto" or None pick CUDA when available and the CPU otherwise."""
    if device is None or device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    resolved = torch.device(device)
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise EmbeddingInputError("device 'cuda' was requested but CUDA is not available")
    return resolved


def to_tensor(block: Any, device: torch.device, dtype: torch.dtype, *, copy: bool = False) -> torch.Tensor:
    """A chunk (numpy array of any byte order, read-only memmaps included, or a tensor) on `device`;
    with `copy`, never the caller's memory (the result may then be modified in place)."""
    if isinstance(block, torch.Tensor):
        return block.to(device=device).to(dtype=dtype, copy=copy)
    array = np.asarray(block)
    if not array.dtype.isnative:
        array = array.astype(array.dtype.newbyteorder("="))
    if not (array.flags.writeable and array.flags.c_contiguous):
        array = np.array(array, order="C")  # torch.from_numpy wants a writable, contiguous buffer
    # Move in the stored precision and widen on the device: half the transfer for float32 data.
    return torch.from_numpy(array).to(device=device).to(dtype=dtype, copy=copy)


def to_numpy(block: Any, dtype: np.dtype[Any]) -> np.ndarray:
    if isinstance(block, torch.Tensor):
        return block.detach().to("cpu").numpy().astype(dtype, copy=False)
    return np.asarray(block).astype(dtype.newbyteorder("="), copy=False)


def as_matrix(embeddings: Any, *, device: torch.device, dtype: torch.dtype, name: str) -> torch.Tensor:
    """A 2-d floating array or tensor, checked, as a tensor on `device`."""
    if isinstance(embeddings, torch.Tensor):
        tensor = embeddings.detach()
        if not tensor.is_floating_point():
            raise EmbeddingInputError(f"{name}: dtype {tensor.dtype}: embeddings must be floating point")
    else:
        array = np.asarray(embeddings)
        if array.dtype.kind not in "fiu":
            raise EmbeddingInputError(f"{name}: dtype {array.dtype}: embeddings must be numeric")
        tensor = to_tensor(array, device, dtype)
    if tensor.ndim != 2:
        raise EmbeddingInputError(f"{name}: shape {tuple(tensor.shape)}: expected a 2-d (rows, dim) array")
    tensor = tensor.to(device=device, dtype=dtype)
    if not bool(torch.isfinite(tensor).all()):
        raise EmbeddingInputError(f"{name}: contains NaN or infinite values")
    return tensor
