"""Embedding drift and collapse: evalcore's monitors against alibi-detect's MMDDrift (torch backend).

    python -m benchmarks.embeddings [--rows 100000] [--dim 768] [--alibi-sizes 10000] \\
        [--permutations 100] [--stream-rows 1000000] [--alibi-python PATH] [--json]

Writes synthetic float32 embeddings as .npy files (a shared mean direction and a decaying spectrum,
like a sentence encoder's; the current set has a small mean shift), then runs each measured step in
its own subprocess so that its peak RSS (VmHWM) is its own:

1. suite: `evaluate_embeddings(reference.npy, current.npy)` with the default `MonitorParams`: every
   quality metric of both files (streamed in chunks), MMD with 200 permutations on 5,000 rows a
   side, KS with Benjamini-Hochberg, the domain classifier, the effect-size calibration, the alerts.
2. mmd n: `mmd_test` on the same n + n rows that alibi-detect gets, with the same kernel bandwidth
   and the same number of permutations;
3. alibi n: `MMDDrift(x_ref, backend="pytorch", sigma=..., n_permutations=...)` and `predict(x)`,
   in alibi-detect's own virtual environment (`--alibi-python`; it is under the Business Source
   License, so it is never a dependency of the platform: `make bench-embeddings` installs it into
   benchmarks/.venv-alibi). Skipped with a note when that interpreter is missing.
4. stream: the suite on `--stream-rows` x dim against as many rows, to show bounded memory.

Both MMD implementations compute the same unbiased MMD^2 with the same RBF kernel; the script checks
ours against the same statistic computed with float64 distances, and alibi-detect's (float32 sums)
against a looser bound (the p-values differ only by their random permutations). Exit status 1 if
either check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_ALIBI_PYTHON = ROOT / "benchmarks" / ".venv-alibi" / "bin" / "python"
#: Our MMD^2 (float32 distances, float64 kernel and sums) against the all-float64 computation.
MMD_ATOL = 1e-9
#: alibi-detect sums 10^8 float32 kernel values: its MMD^2, a difference of means of about 0.5, is
#: off by some 1e-6 at n = 10,000; reported beside ours, and only checked against this loose bound.
ALIBI_ATOL = 1e-5

# --- synthetic data (parent process only) -------------------------------------------------------


def write_embeddings(path: Path, *, rows: int, dim: int, seed: int, shift: float = 0.0) -> None:
    """rows x dim float32 written chunk by chunk: never the whole matrix in memory."""
    import numpy as np

    structure = np.random.default_rng(1234)  # the same "encoder" for every file
    spectrum = (1.0 / np.sqrt(np.arange(1, dim + 1))).astype(np.float32)
    mixing = np.linalg.qr(structure.normal(size=(dim, dim)))[0].astype(np.float32) * spectrum[:, None]
    mean = structure.normal(size=dim).astype(np.float32) * 0.15
    direction = structure.normal(size=dim).astype(np.float32)
    direction /= np.linalg.norm(direction)
    rng = np.random.default_rng(seed)
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(rows, dim))
    for lo in range(0, rows, 50_000):
        hi = min(lo + 50_000, rows)
        block = rng.standard_normal((hi - lo, dim), dtype=np.float32) @ mixing + mean
        out[lo:hi] = block + shift * direction
    out.flush()
    del out


def write_samples(reference: Path, current: Path, directory: Path, size: int, seed: int) -> tuple[Path, Path]:
    """The same seeded rows of each file, for the two MMD implementations."""
    import numpy as np

    paths = []
    for name, source in (("mmd_reference", reference), ("mmd_current", current)):
        data = np.load(source, mmap_mode="r")
        rows = np.sort(np.random.default_rng(seed).choice(data.shape[0], size=size, replace=False))
        path = directory / f"{name}.npy"
        np.save(path, np.ascontiguousarray(data[rows]))
        paths.append(path)
    return paths[0], paths[1]


# --- the measured steps, one per child process --------------------------------------------------


def _peak_rss_mb() -> float:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def child_suite(reference: str, current: str) -> dict[str, Any]:
    from evalcore.embeddings import evaluate_embeddings

    started, cpu = time.perf_counter(), time.process_time()
    report = evaluate_embeddings(reference, current, device="cpu")
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
    return {
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "sections": report.sections(),
        "effect_thresholds": report.calibration.thresholds if report.calibration else None,
        "alerts": [(section, firing.rule) for section, firing in report.alerts()],
    }


def child_mmd(reference: str, current: str, size: int, permutations: int, sigma: float) -> dict[str, Any]:
    import numpy as np
    import torch

    from evalcore.embeddings import mmd_test

    x, y = np.load(reference)[:size], np.load(current)[:size]
    started, cpu = time.perf_counter(), time.process_time()
    result = mmd_test(x, y, n_permutations=permutations, bandwidth=sigma, device="cpu")
    measured = {
        "seconds": time.perf_counter() - started,
        "cpu_seconds": time.process_time() - cpu,
        "peak_rss_mb": _peak_rss_mb(),
    }
    # Untimed and after the peak is read: the statistic with float64 distances, the reference for both.
    exact = mmd_test(x, y, n_permutations=0, bandwidth=sigma, device="cpu", dtype=torch.float64)
    return measured | {"mmd2": result.mmd2, "p_value": result.p_value, "mmd2_float64": exact.mmd2}


def child_alibi(reference: str, current: str, size: int, permutations: int, sigma: float) -> dict[str, Any]:
    import numpy as np
    from alibi_detect.cd import MMDDrift

    x, y = np.load(reference)[:size], np.load(current)[:size]
    started, cpu = time.perf_counter(), time.process_time()
    detector = MMDDrift(
        x,
        backend="pytorch",
        sigma=np.array([sigma], dtype=np.float32),
        configure_kernel_from_x_ref=False,
        n_permutations=permutations,
        device="cpu",
    )
    built = time.perf_counter()
    prediction = detector.predict(y)["data"]
    done = time.perf_counter()
    return {
        "seconds": done - started,
        "cpu_seconds": time.process_time() - cpu,
        "init_seconds": built - started,
        "mmd2": float(prediction["distance"]),
        "p_value": float(prediction["p_val"]),
    }


CHILDREN = {"suite": child_suite, "mmd": child_mmd, "alibi": child_alibi}


def run_child(python: str, step: str, *args: object) -> dict[str, Any]:
    command = [python, "-m", "benchmarks.embeddings", "--child", step, *map(str, args)]
    completed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        raise RuntimeError(f"{step} failed:\n{completed.stderr[-3000:]}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def child_main(step: str, args: list[str]) -> None:
    convert = {"suite": (str, str), "mmd": (str, str, int, int, float), "alibi": (str, str, int, int, float)}
    values = [kind(value) for kind, value in zip(convert[step], args, strict=True)]
    result = CHILDREN[step](*values)
    result.setdefault("peak_rss_mb", _peak_rss_mb())
    print(json.dumps(result, default=float))


# --- the parent ---------------------------------------------------------------------------------


def run(args: argparse.Namespace, directory: Path) -> dict[str, Any]:
    import numpy as np

    from evalcore.embeddings import median_bandwidth

    python = sys.executable
    results: dict[str, Any] = {"rows": args.rows, "dim": args.dim, "permutations": args.permutations}
    reference, current = directory / "reference.npy", directory / "current.npy"
    write_embeddings(reference, rows=args.rows, dim=args.dim, seed=1)
    write_embeddings(current, rows=args.rows, dim=args.dim, seed=2, shift=args.shift)
    log(f"suite: {args.rows:,} x {args.dim} against {args.rows:,} x {args.dim}")
    results["suite"] = run_child(python, "suite", reference, current)

    sizes = sorted(args.alibi_sizes)
    x_path, y_path = write_samples(reference, current, directory, max(sizes), seed=7)
    sigma = median_bandwidth(np.load(x_path), device="cpu")
    results["sigma"] = sigma
    alibi_python = Path(args.alibi_python)
    comparisons = []
    for size in sizes:
        log(f"mmd: {size:,} + {size:,} rows, {args.permutations} permutations")
        ours = run_child(python, "mmd", x_path, y_path, size, args.permutations, sigma)
        entry: dict[str, Any] = {"size": size, "evalcore": ours}
        if alibi_python.exists():
            log(f"alibi-detect: {size:,} + {size:,} rows, {args.permutations} permutations")
            theirs = run_child(str(alibi_python), "alibi", x_path, y_path, size, args.permutations, sigma)
            entry["alibi"] = theirs
            entry["speedup"] = theirs["seconds"] / ours["seconds"]
            entry["cpu_speedup"] = theirs["cpu_seconds"] / ours["cpu_seconds"]
            entry["memory_ratio"] = theirs["peak_rss_mb"] / ours["peak_rss_mb"]
            entry["alibi_mmd2_error"] = abs(theirs["mmd2"] - ours["mmd2_float64"])
        else:
            entry["alibi"] = f"skipped: {alibi_python} not found (make bench-embeddings installs it)"
        comparisons.append(entry)
    results["mmd_comparison"] = comparisons

    if args.stream_rows:
        for path in (reference, current):
            path.unlink()
        big_reference, big_current = directory / "big_reference.npy", directory / "big_current.npy"
        write_embeddings(big_reference, rows=args.stream_rows, dim=args.dim, seed=3)
        write_embeddings(big_current, rows=args.stream_rows, dim=args.dim, seed=4, shift=args.shift)
        log(f"stream: {args.stream_rows:,} x {args.dim} against {args.stream_rows:,} x {args.dim}")
        results["stream"] = run_child(python, "suite", big_reference, big_current)
        results["stream"]["rows"] = args.stream_rows
        results["stream"]["file_gb"] = big_reference.stat().st_size / 1e9
    return results


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def report(results: dict[str, Any]) -> str:
    suite = results["suite"]
    lines = [
        f"Load average at the end: {os.getloadavg()[0]:.1f} (others' work on this machine slows wall time)",
        f"Full monitor suite, {results['rows']:,} x {results['dim']} against {results['rows']:,} x "
        f"{results['dim']} (CPU, {os.cpu_count()} cores): {suite['seconds']:.1f} s "
        f"({suite['cpu_seconds']:.1f} s CPU), peak RSS {suite['peak_rss_mb']:,.0f} MB",
        f"  drift: {json.dumps(suite['sections']['drift'])}",
        f"  alerts: {suite['alerts']}",
        f"MMD^2 with {results['permutations']} permutations, same rows and bandwidth ({results['sigma']:.4g}):",
    ]
    for entry in results["mmd_comparison"]:
        ours = entry["evalcore"]
        lines.append(
            f"  n = {entry['size']:,} a side: evalcore {ours['seconds']:.2f} s ({ours['cpu_seconds']:.1f} s CPU), "
            f"{ours['peak_rss_mb']:,.0f} MB, "
            f"MMD^2 {ours['mmd2']:.6g} (all-float64: {ours['mmd2_float64']:.6g}), p {ours['p_value']:.3f}"
        )
        theirs = entry["alibi"]
        if isinstance(theirs, str):
            lines.append(f"    alibi-detect {theirs}")
            continue
        lines.append(
            f"    alibi-detect {theirs['seconds']:.1f} s ({theirs['cpu_seconds']:.0f} s CPU), "
            f"{theirs['peak_rss_mb']:,.0f} MB, MMD^2 {theirs['mmd2']:.6g}, p {theirs['p_value']:.3f}: "
            f"{entry['speedup']:.0f}x faster ({entry['cpu_speedup']:.0f}x in CPU time), "
            f"{entry['memory_ratio']:.1f}x less memory; its MMD^2 is off the float64 value by "
            f"{entry['alibi_mmd2_error']:.1e}"
        )
    if "stream" in results:
        stream = results["stream"]
        lines.append(
            f"Streamed suite, {stream['rows']:,} x {results['dim']} against as many ({stream['file_gb']:.1f} GB "
            f"a file): {stream['seconds']:.1f} s ({stream['cpu_seconds']:.0f} s CPU), "
            f"peak RSS {stream['peak_rss_mb']:,.0f} MB"
        )
    return "\n".join(lines)


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child_main(sys.argv[2], sys.argv[3:])
        return 0
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--shift", type=float, default=0.05, help="mean shift of the current set")
    parser.add_argument("--alibi-sizes", type=int, nargs="+", default=[10_000], help="rows a side")
    parser.add_argument("--permutations", type=int, default=100)
    parser.add_argument("--stream-rows", type=int, default=1_000_000, help="0 to skip the streamed run")
    parser.add_argument("--alibi-python", default=str(DEFAULT_ALIBI_PYTHON))
    parser.add_argument("--data-dir", help="where to write the .npy files (default: a temporary directory)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.data_dir) as directory:
        results = run(args, Path(directory))
    print(json.dumps(results, default=float) if args.json else report(results))
    failures = [
        entry
        for entry in results["mmd_comparison"]
        if abs(entry["evalcore"]["mmd2"] - entry["evalcore"]["mmd2_float64"]) > MMD_ATOL
        or (isinstance(entry["alibi"], dict) and entry["alibi_mmd2_error"] > ALIBI_ATOL)
    ]
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
