"""Benchmark of KAPRA and PC-KAPRA (k,P)-anonymity (seed 001 §3.3) on one released variable.

Measured on the ``stays`` release of a finished workflow run (``--run-dir``, default
``benchmarks/work/full``), loaded with the library's own functions (``benchmarks/common.py``);
without a finished run the script falls back to generated classes and says so. The variable is
heart rate with its missing hours withheld as the workflow does
(:func:`mimic_deid.deid.missing.fill_missing_hours`); k = the run's first fk, P = 5, PAA 10
(capped at a class's length), SAX level 10 (the seed's setting).

1. The class nearest 595 series (the largest class of the full-scale synthetic run,
   595 x 18 h) and the largest class: wall time of each phase (pattern groups, top-down
   deconstruction, Algorithm 3 group formation) and of the whole grouping, target < 10 s.
2. The whole release, one variable, classes in 2 worker processes
   (:func:`mimic_deid.deid.classes.map_classes`, as the ``deidentify`` rule), target < 5 min.
3. A generated class the size of the full-scale ``ihm48`` training split (15,000 x 48 h,
   one class per split there), to show the blocked O(n^2) phases at that size.

Usage: ``python benchmarks/bench_kapra.py [--run-dir DIR] [--quick]``; writes
``benchmarks/results/kapra.json`` (not with ``--quick``).
"""

from __future__ import annotations

import sys
import time

import numpy as np
from common import (
    RESULTS,
    ROOT,
    load_release,
    machine_info,
    print_release,
    run_dir_parser,
    synth_class,
    timed,
)

from mimic_deid.core.atomic import write_json
from mimic_deid.core.seeding import derive_rng
from mimic_deid.deid.classes import ClassArray, map_classes
from mimic_deid.deid.kapra import (
    form_k_groups,
    kapra_pattern_groups,
    kp_anonymise,
    pc_kapra_pattern_groups,
    split_p_groups,
)
from mimic_deid.deid.missing import fill_missing_hours

OUT = RESULTS / "kapra.json"
VARIABLE = "heart_rate"
P, PAA, LEVEL = 5, 10, 10
CLASS_TARGET_S = 10.0
RELEASE_TARGET_S = 300.0
IHM48_TRAIN = (15_000, 48)
ALGORITHMS = ("kapra", "pc-kapra")

sys.path.insert(0, str(ROOT / "tests"))  # the SAX measures only the checks use
from sax_reference import tivl  # noqa: E402


def variable_of(cls: ClassArray, dims: list[str]) -> np.ndarray:
    """The benchmark variable of a class, (n, L), missing hours withheld as in the workflow."""
    return fill_missing_hours(cls.X[:, :, [dims.index(VARIABLE)]])[:, :, 0]


def phases(x: np.ndarray, k: int, algorithm: str) -> dict:
    """Wall seconds of each phase and of the whole grouping of one class."""
    paa = min(PAA, x.shape[1])
    rng = derive_rng(0, "bench-kapra", algorithm)
    t0 = time.perf_counter()
    if algorithm == "kapra":
        groups = kapra_pattern_groups(x, P, paa, LEVEL)[0]
    else:
        groups = pc_kapra_pattern_groups(x, P, paa, LEVEL, rng)[0]
    t1 = time.perf_counter()
    p_groups = split_p_groups(x, groups, P)
    t2 = time.perf_counter()
    k_groups = form_k_groups(x, p_groups, k)
    t3 = time.perf_counter()
    whole = timed(kp_anonymise, x, k, P, paa, LEVEL, algorithm, derive_rng(0, "bench", algorithm))
    return {
        "pattern_groups_s": round(t1 - t0, 3),
        "deconstruction_s": round(t2 - t1, 3),
        "group_formation_s": round(t3 - t2, 3),
        "whole_s": round(whole.wall_s, 3),
        "within_target": whole.wall_s < CLASS_TARGET_S,
        "tivl": round(tivl(x, k_groups), 3),
        "k_groups": int(k_groups.max()) + 1,
    }


def _group_class(cls: ClassArray, dims: list[str], k: int, algorithm: str, seed: int) -> int:
    """One class of the release through ``algorithm`` (module level for worker processes)."""
    x = variable_of(cls, dims)
    if np.isnan(x).all() or len(x) < k:
        return 0
    rng = derive_rng(seed, algorithm, cls.group, cls.length)
    res = kp_anonymise(x, k, P, min(PAA, cls.length), LEVEL, algorithm, rng)
    return int(res.k_group.max()) + 1


def main() -> None:
    parser = run_dir_parser(__doc__)
    parser.add_argument("--quick", action="store_true", help="classes only, no record")
    args = parser.parse_args()
    release = load_release(args.run_dir)
    size = print_release(release)
    dims = release.dims
    k = int(release.config["deid"]["fk"][0])
    record: dict = {"machine": machine_info(), "release": size, "k": k, "P": P, "paa": PAA}
    record["level"] = LEVEL
    for name, index in (
        ("class_near_595", release.nearest_size_index(595)),
        ("largest_class", release.largest_index()),
    ):
        cls = release.get(index)
        x = variable_of(cls, dims)
        record[name] = {"n": len(cls.keys), "length_h": cls.length}
        for algorithm in ALGORITHMS:
            record[name][algorithm] = phases(x, k, algorithm)
            print(f"{name} {x.shape}: {algorithm} {record[name][algorithm]}", flush=True)
    if args.quick:
        return
    n, length = IHM48_TRAIN
    big = ClassArray(
        "train", length, np.arange(n), synth_class(derive_rng(0, "ihm48"), n, length, dims)
    )
    x = variable_of(big, dims)
    record["ihm48_train_size_class"] = {"n": n, "length_h": length}
    for algorithm in ALGORITHMS:
        record["ihm48_train_size_class"][algorithm] = phases(x, k, algorithm)
        print(f"generated {x.shape}: {algorithm} {record['ihm48_train_size_class'][algorithm]}")
    classes = list(release.iter_classes())
    for algorithm in ALGORITHMS:
        n = len(classes)
        run = timed(
            map_classes,
            _group_class,
            classes,
            [dims] * n,
            [k] * n,
            [algorithm] * n,
            [2020] * n,
            label=f"{algorithm} {VARIABLE}",
            threads=2,
        )
        record[f"release_{algorithm}"] = {
            "wall_s": round(run.wall_s, 2),
            "within_target": run.wall_s < RELEASE_TARGET_S,
            "k_groups": int(sum(run.value)),
        }
        print(f"whole release, {algorithm}: {record[f'release_{algorithm}']}", flush=True)
    write_json(record, OUT)
    print(f"written {OUT}")


if __name__ == "__main__":
    main()
