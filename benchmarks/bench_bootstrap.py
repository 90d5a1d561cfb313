"""Bootstrap intervals of ROC-AUC and PR-AUC: the library's vectorised resampling against
``scipy.stats.bootstrap`` with scikit-learn's metrics, side by side in one run.

``mimic_deid.evaluate.utility`` draws all resamples as multiplicity counts and scores them in
one pass over the sorted scores; the maintained alternative resamples the data and calls
``roc_auc_score`` / ``average_precision_score`` once per resample. The two are alternated
``--repeat`` times per size and the best of each kept; the ratio is recorded in
``benchmarks/results/bootstrap.json``. Sizes: the test split of ihm48 on the default
synthetic copy (~500 stays) and at MIMIC-III scale (~3,000).

    python benchmarks/bench_bootstrap.py [--resamples 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json

import numpy as np
from common import RESULTS, machine_info, timed
from scipy import stats
from sklearn.metrics import average_precision_score, roc_auc_score

from mimic_deid.core.atomic import write_json
from mimic_deid.core.seeding import derive_rng
from mimic_deid.evaluate.model import _bootstrap

OUT = RESULTS / "bootstrap.json"


def scipy_bootstrap(y: np.ndarray, scores: np.ndarray, resamples: int, seed: int) -> None:
    def metric(fn):
        def statistic(yy, ss, axis=-1):
            rows = zip(np.atleast_2d(yy), np.atleast_2d(ss), strict=True)
            return np.array([fn(r, q) if r.min() != r.max() else np.nan for r, q in rows])

        return statistic

    for fn in (roc_auc_score, average_precision_score):
        stats.bootstrap(
            (y, scores), metric(fn), paired=True, vectorized=True, n_resamples=resamples,
            method="percentile", random_state=derive_rng(seed), batch=250,
        )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rng = derive_rng(0)
    record = {"machine": machine_info(), "resamples": args.resamples, "sizes": {}}
    for n in (500, 3000):
        y = (rng.random(n) < 0.13).astype(np.int64)
        scores = rng.random(n) + 0.3 * y
        best = {"library": np.inf, "scipy": np.inf}
        for _ in range(args.repeat):  # alternate, so both see the same machine load
            lib = timed(_bootstrap, y, scores, args.resamples, derive_rng(1))
            ref = timed(scipy_bootstrap, y, scores, args.resamples, 1)
            best = {
                "library": min(best["library"], lib.wall_s),
                "scipy": min(best["scipy"], ref.wall_s),
            }
        best["scipy_over_library"] = best["scipy"] / best["library"]
        record["sizes"][str(n)] = {k: round(v, 4) for k, v in best.items()}
        print(n, json.dumps(record["sizes"][str(n)]), flush=True)
    write_json(record, OUT)


if __name__ == "__main__":
    main()
