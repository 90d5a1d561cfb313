"""Utility of the microaggregation release methods on a finished run's ``ihm48`` release.

Issue 49.3: choose a method by what it keeps for a clinical model, measured on the
**validation** split (the test split is reported beside it, never used to choose). For each
release method label (default ``mdav`` and ``mdav-spread``) and each fk, the release is made
as the workflow makes it (:func:`mimic_deid.deid.read_release_classes`,
:func:`mimic_deid.deid.apply_method` with the run's protected features and plausible values,
:func:`mimic_deid.deid.pseudonymous_release` with the published demographics), then the
utility evaluation's own model (:func:`mimic_deid.evaluate.fit_mortality_model`, C chosen on
the release's validation split) is scored with :func:`mimic_deid.evaluate.evaluate_model`:
de-id./de-id. and de-id./orig. (original side as recorded) ROC-AUC with 95 % bootstrap
intervals on the validation and test splits, per task, beside the data owner's model.

Also printed per split and task: the **ceiling** of de-id./de-id.
(:func:`mimic_deid.evaluate.model.roc_auc_ceiling`: each published series scored by the share
of label 1 among the series with its features, the best any model of them can do, since a
cluster's members publish one series), and the number of distinct published feature vectors.

Usage: ``python benchmarks/bench_mdav_utility.py --run-dir DIR [--fk 5 10 20]
[--labels mdav mdav-spread] [--bootstrap 1000]``. ``DIR`` is a run of ``stages: [series]``
whose ``ihm48`` targets exist for every fk given (``deid.fk`` listing them).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from common import ROOT, path, workflow_config

from mimic_deid.config import validate_config
from mimic_deid.core.arrays import distinct_rows
from mimic_deid.deid import (
    PlausibleValues,
    apply_method,
    protected_features,
    pseudonymous_release,
    read_release_classes,
)
from mimic_deid.deid.duration import LABELS
from mimic_deid.evaluate.benchmark_features import datasets_from_long
from mimic_deid.evaluate.model import roc_auc_ceiling
from mimic_deid.evaluate.utility import evaluate_model, fit_mortality_model
from mimic_deid.pipeline.variables import load_variables

SEED = 2020


def _auc(result: dict) -> str:
    return f"{result['roc_auc']:.3f} [{result['roc_auc_lo']:.3f}, {result['roc_auc_hi']:.3f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", type=Path, required=True)
    parser.add_argument("--fk", type=int, nargs="+", default=[5, 10, 20])
    parser.add_argument("--labels", nargs="+", default=["mdav", "mdav-spread"])
    parser.add_argument("--bootstrap", type=int, default=1000)
    args = parser.parse_args()
    config = validate_config(
        workflow_config(args.run_dir), str(ROOT / "config" / "schema.yaml"), variables=False
    )
    deid, dk = config["deid"], config["deid"]["dk"][0]
    variables = load_variables(str(ROOT / "config" / "variables.yaml"))
    series = pd.read_parquet(args.run_dir / path("series", release="ihm48"))
    meta = pd.read_parquet(args.run_dir / path("meta", release="ihm48"))
    demographics = list(config["release"]["demographics"])
    owner: dict[str, tuple] = {}
    print("fk | label | task | split | owner | de-id./de-id. | de-id./orig. | ceiling (series)")
    for fk in args.fk:
        wild = dict(release="ihm48", dk=dk, fk=fk, heuristic="range")
        classes, dims, outcomes = read_release_classes(
            str(args.run_dir / path("series", release="ihm48")),
            str(args.run_dir / path("duration", **wild)),
            str(args.run_dir / path("meta", release="ihm48")),
            deid["outcome_l"],
        )
        targets = pd.read_parquet(args.run_dir / path("targets", **wild))
        plausible = PlausibleValues.from_variables(variables, dims)
        for label in args.labels:
            perturbed, _, _ = apply_method(
                classes, dims, targets, protected_features(deid["features"], dims, "all"),
                label=label, seed=SEED, fk=fk, outcomes=outcomes, ell=deid["outcome_l"],
                plausible=plausible,
            )  # fmt: skip
            public, index, _ = pseudonymous_release(
                perturbed, pd.read_parquet(args.run_dir / path("duration", **wild)), meta,
                seed=SEED, salt=label, variables=dims, labelled=True, publish_split=True,
                demographics=targets[["icustay_id", *demographics]] if demographics else None,
                plausible=plausible,
            )  # fmt: skip
            for task, public_col in LABELS.items():
                if task not in owner:
                    data = datasets_from_long(
                        series, meta, "icustay_id", dims, task, length_col="length"
                    )
                    model, _ = fit_mortality_model(
                        data["train"], data["validation"], deid_cs(config), SEED
                    )
                    owner[task] = (data, model)
                data, model = owner[task]
                released = datasets_from_long(
                    public, index, "pseudonym", dims, public_col, length_col="duration_class"
                )
                deid_model, _ = fit_mortality_model(
                    released["train"], released["validation"], deid_cs(config), SEED
                )
                for split in ("validation", "test"):
                    own = evaluate_model(model, *data[split], args.bootstrap, SEED)
                    dd = evaluate_model(deid_model, *released[split], args.bootstrap, SEED)
                    do = evaluate_model(deid_model, *data[split], args.bootstrap, SEED)
                    X_split = released[split][0]
                    distinct = len(distinct_rows(X_split)[0])
                    extra = f"{roc_auc_ceiling(*released[split]):.3f} ({distinct})"
                    print(f"{fk} | {label} | {task} | {split} | {_auc(own)} | {_auc(dd)} | "
                          f"{_auc(do)} | {extra}", flush=True)  # fmt: skip


def deid_cs(config: dict) -> list[float]:
    """The utility evaluation's C grid (config ``evaluate.utility.C``)."""
    return list(config["evaluate"]["utility"]["C"])


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
