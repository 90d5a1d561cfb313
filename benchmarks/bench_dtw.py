"""Benchmark of the DTW series distance (config ``evaluate.series_distance: dtw``) against the
masked Euclidean one, on whole duration classes.

1. Classes of ``--sizes`` series (default 250, 1,000, 2,000) × 48 h × the series dimensions of
   ``config/variables.yaml``, generated physiology with its null pattern
   (``benchmarks/common.py``), original vs a stand-in release (Gaussian noise of sd 3 on the
   protected dimensions): the full n × n matrix of ``series_distances`` (Euclidean) and of
   ``dtw_distances`` at the default band (``evaluate.dtw_window``) and, up to
   ``--unconstrained-max`` series, without a band. The distances are timed alternately in the
   same process (Euclidean, DTW, Euclidean, DTW, ...; ``--repeat`` pairs on the smallest class,
   one on the others) and the DTW/Euclidean ratio is taken pair by pair.
2. ``--release``: every class of the generated MIMIC-size ``stays`` release (``common.py``),
   baseline (released = original), Euclidean and DTW at the default band: the whole cost a
   ``privacy_baseline`` job adds with ``series_distance: dtw``.
3. ``--candidates N``: the library choice. The same per-dimension DTW of compacted sequences
   (``mimic_deid.evaluate.distances`` module docstring) on one class of N series by
   ``dtaidistance`` (``dtw.distance_matrix_fast``, what the project uses) and by ``tslearn``
   (``metrics.cdist_dtw`` on NaN-padded variable-length sequences, its way of taking
   sequences of different lengths), after a warm-up that compiles tslearn's numba code;
   results compared. Skipped with a note when tslearn is not installed (it is no dependency).

Native thread pools are pinned to one thread (the privacy rules run with ``threads: 1``).
Usage: ``python benchmarks/bench_dtw.py [--sizes 250 1000 2000] [--release] [--candidates 100]``;
writes ``benchmarks/results/dtw.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np
from common import RESULTS, generated_release, machine_info, series_dims, synth_class

from mimic_deid.core.atomic import write_json
from mimic_deid.core.seeding import derive_rng
from mimic_deid.core.threads import pin_threads
from mimic_deid.deid.features import protected_features
from mimic_deid.evaluate.distances import compact_dimension, dtw_distances, series_distances
from mimic_deid.evaluate.privacy import DTW_WINDOW

OUT = RESULTS / "dtw.json"
LENGTH = 48


def clock(fn, *args, **kwargs) -> tuple[float, float, Any]:
    """Wall and CPU seconds of one call, and its value."""
    t0, c0 = time.perf_counter(), time.process_time()
    value = fn(*args, **kwargs)
    return time.perf_counter() - t0, time.process_time() - c0, value


def make_class(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, list[str]]:
    from common import workflow_config

    dims = series_dims()
    rng = derive_rng(seed, "bench-dtw", n)
    X = synth_class(rng, n, LENGTH, dims)
    protected = protected_features(workflow_config(None)["deid"]["features"], dims, "features")
    Xr = X.copy()
    fd = [dims.index(v) for v in protected]
    Xr[:, :, fd] += rng.normal(0.0, 3.0, (n, LENGTH, len(fd)))
    return X, Xr, dims


def measure_class(n: int, repeat: int, unconstrained: bool, seed: int) -> dict:
    X, Xr, dims = make_class(n, seed)
    modes = {"dtw_window": DTW_WINDOW}
    if unconstrained:
        modes["dtw_unconstrained"] = None
    rows: dict[str, list[tuple[float, float]]] = {"euclidean": [], **{m: [] for m in modes}}
    ratios: dict[str, list[float]] = {m: [] for m in modes}
    values: dict[str, np.ndarray] = {}
    for _ in range(repeat):
        w_e, c_e, values["euclidean"] = clock(series_distances, X, Xr)
        rows["euclidean"].append((w_e, c_e))
        for mode, window in modes.items():
            w_d, c_d, values[mode] = clock(dtw_distances, X, Xr, window=window)
            rows[mode].append((w_d, c_d))
            ratios[mode].append(w_d / w_e)
    null_pct = float(np.isnan(X).mean() * 100)
    out: dict[str, Any] = {
        "n": n,
        "length_h": LENGTH,
        "dims": len(dims),
        "null_pct": round(null_pct, 1),
        "pairs": n * n,
        "repeat": repeat,
    }
    for mode, vals in rows.items():
        wall = float(np.median([v[0] for v in vals]))
        cpu = float(np.median([v[1] for v in vals]))
        out[mode] = {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3)}
        if mode != "euclidean":
            out[mode]["window"] = modes[mode]
            out[mode]["ratio_to_euclidean"] = round(float(np.median(ratios[mode])), 1)
            out[mode]["pairs_per_s"] = round(n * n / wall)
    # how often warping brings a pair closer than the Euclidean distance (default band)
    closer = values["dtw_window"] < values["euclidean"]
    out["dtw_window"]["closer_than_euclidean_pct"] = round(float(closer.mean() * 100), 1)
    print(json.dumps(out), flush=True)
    return out


def measure_release(seed: int) -> dict:
    release = generated_release(seed=seed, reason="benchmark of the DTW distance")
    tot = {"euclidean": [0.0, 0.0], "dtw_window": [0.0, 0.0]}
    slowest = {"dtw_s": 0.0}
    for cls in release.iter_classes():
        w_e, c_e, _ = clock(series_distances, cls.X, cls.X)
        w_d, c_d, _ = clock(dtw_distances, cls.X, cls.X, window=DTW_WINDOW)
        tot["euclidean"][0] += w_e
        tot["euclidean"][1] += c_e
        tot["dtw_window"][0] += w_d
        tot["dtw_window"][1] += c_d
        if w_d > slowest["dtw_s"]:
            slowest = {"dtw_s": round(w_d, 2), "n": int(cls.X.shape[0]), "length_h": cls.length}
    summary = release.summary()
    out = {
        "release": release.description,
        "classes": summary.get("classes"),
        "series": summary.get("series"),
        "window": DTW_WINDOW,
        "euclidean": {
            "wall_s": round(tot["euclidean"][0], 1),
            "cpu_s": round(tot["euclidean"][1], 1),
        },
        "dtw_window": {
            "wall_s": round(tot["dtw_window"][0], 1),
            "cpu_s": round(tot["dtw_window"][1], 1),
        },
        "ratio": round(tot["dtw_window"][0] / tot["euclidean"][0], 1),
        "slowest_dtw_class": slowest,
    }
    print(json.dumps(out), flush=True)
    return out


def tslearn_dtw(X: np.ndarray, Y: np.ndarray, window: int | None) -> np.ndarray:
    """The same definition through tslearn: per dimension, NaN-padded compacted sequences."""
    from tslearn.metrics import cdist_dtw

    kw = (
        {} if window is None else {"global_constraint": "sakoe_chiba", "sakoe_chiba_radius": window}
    )
    acc = np.zeros((X.shape[0], Y.shape[0]))
    seen = np.zeros(acc.shape, dtype=bool)
    for k in range(X.shape[2]):
        (ia, sa), (ib, sb) = compact_dimension(X, k), compact_dimension(Y, k)
        if not (ia.size and ib.size):
            continue

        def padded(seqs):
            P = np.full((len(seqs), max(len(s) for s in seqs), 1), np.nan)
            for r, s in enumerate(seqs):
                P[r, : len(s), 0] = s
            return P

        d = cdist_dtw(padded(sa), padded(sb), n_jobs=1, **kw)
        acc[np.ix_(ia, ib)] += d**2
        seen[np.ix_(ia, ib)] = True
    d = np.sqrt(acc)
    d[~seen] = np.nan
    return d


def measure_candidates(n: int, seed: int) -> dict:
    X, Xr, _ = make_class(n, seed)
    out: dict[str, Any] = {"n": n, "length_h": LENGTH, "window": None}
    w, c, d_dtai = clock(dtw_distances, X, Xr, window=None)
    out["dtaidistance"] = {"wall_s": round(w, 2), "cpu_s": round(c, 2)}
    try:
        import tslearn
    except ImportError:
        out["tslearn"] = "not installed"
        print(json.dumps(out), flush=True)
        return out
    tslearn_dtw(X[:3], Xr[:3], None)  # warm-up: numba compilation
    w, c, d_ts = clock(tslearn_dtw, X, Xr, None)
    out["tslearn"] = {
        "version": tslearn.__version__,
        "wall_s": round(w, 2),
        "cpu_s": round(c, 2),
        "max_abs_difference": float(np.nanmax(np.abs(d_ts - d_dtai))),
    }
    out["ratio_tslearn_to_dtaidistance"] = round(
        out["tslearn"]["wall_s"] / out["dtaidistance"]["wall_s"], 1
    )
    print(json.dumps(out), flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[250, 1000, 2000])
    parser.add_argument("--repeat", type=int, default=3, help="pairs timed on the smallest class")
    parser.add_argument("--unconstrained-max", type=int, default=1000)
    parser.add_argument("--release", action="store_true", help="also the whole generated release")
    parser.add_argument("--candidates", type=int, default=0, help="library comparison on N series")
    parser.add_argument("--seed", type=int, default=2020)
    args = parser.parse_args()
    pin_threads(1)
    from dtaidistance import __version__ as dtai_version

    record: dict[str, Any] = {
        "machine": machine_info(),
        "dtaidistance": dtai_version,
        "default_window": DTW_WINDOW,
    }
    if args.candidates:
        record["candidates"] = measure_candidates(args.candidates, args.seed)
    smallest = min(args.sizes)
    record["classes"] = [
        measure_class(
            n, args.repeat if n == smallest else 1, n <= args.unconstrained_max, args.seed
        )
        for n in args.sizes
    ]
    if args.release:
        record["release"] = measure_release(args.seed)
    write_json(record, OUT)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
