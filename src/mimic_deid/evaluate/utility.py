"""Utility of a release: the benchmark in-hospital-mortality baseline under four trust settings.

The model is the logistic-regression baseline of YerevaNN/mimic3-benchmarks (seed 5.7): the
7 x 6 hand-engineered features of :mod:`mimic_deid.evaluate.benchmark_features`, mean
imputation and standard scaling fitted on the training split, L2-regularised logistic
regression with C chosen by ROC-AUC on the validation split. It is evaluated by ROC-AUC and
PR-AUC (average precision) with percentile-bootstrap 95 % intervals, under the trust settings
of seed 5.7 / Tables 6.3-6.4 (training / test data: orig/orig, deid/deid, orig/deid, deid/orig).

:func:`utility_table` separates what a release costs into rows (issue 27):

- the data owner's baseline, orig. / orig. on **all** series variables, beside orig. / orig. on
  the released ones: their gap is the cost of withholding variables (``release.variables``);
- the four settings with the original side as recorded (``shipped``) and gap-filled like the
  release (``gap_filled``): in the cross settings the shipped original side differs from the
  release both in its perturbation and in its measurement pattern (which hours are null, a
  pattern the release withholds, :mod:`mimic_deid.deid.missing`, and which the benchmark's
  subsequence statistics see), the gap-filled one by the perturbation only.

Nothing here writes files; the workflow script writes the CSV/JSON/markdown.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from mimic_deid.core.errors import InputDataError
from mimic_deid.core.logs import get_logger
from mimic_deid.core.numbers import auc as fmt_auc
from mimic_deid.deid.duration import LABELS

if TYPE_CHECKING:  # scikit-learn is imported where a model is fitted or scored: importing
    # this module (as the workflow does when it starts) stays light
    pass
from mimic_deid.deid.missing import fill_missing_hours
from mimic_deid.evaluate.benchmark_features import (
    STATISTICS,
    SUBSEQUENCES,
    benchmark_features,
    datasets_from_long,
    features_from_long,
    subsequence_bounds,
)
from mimic_deid.evaluate.model import (
    DEFAULT_CS,
    METRIC_COLUMNS,
    SCORE_COLUMNS,
    Dataset,
    evaluate_model,
    fit_mortality_model,
)

__all__ = [
    "CROSS",
    "DEFAULT_CS",
    "KEY_COLUMNS",
    "METRIC_COLUMNS",
    "SEED_TRUST_SETTINGS",
    "SETTINGS",
    "TASKS",
    "VARIABLES",
    "STATISTICS",
    "SUBSEQUENCES",
    "benchmark_features",
    "datasets_from_long",
    "evaluate_model",
    "features_from_long",
    "fit_mortality_model",
    "subsequence_bounds",
    "utility_table",
]

log = get_logger(__name__)

TASKS: dict[str, tuple[str, str]] = {task: (task, public) for task, public in LABELS.items()}
"""Prediction tasks of the utility table, one per published label
(:data:`mimic_deid.deid.duration.LABELS`): task -> (label column of the original ``ihm48``
meta table, label column of the release index). ``mortality``: in-hospital mortality (seed
5.7); ``long_stay``: the ICU stay lasts more than 7 days (mimic3-benchmarks' long-stay cut),
predicted from the same first 48 hours."""

VARIABLES: tuple[str, ...] = ("all", "released")
"""Which variables the models of a row see: ``all`` series variables of the original data
(the data owner's baseline, orig. / orig. only) or the ``released`` ones (every setting)."""

CROSS: tuple[str, ...] = ("shipped", "gap_filled")
"""How the original side of the trust settings is prepared (config ``evaluate.utility.cross``
picks which one the sweep summary's headline columns use): ``shipped``, the original series
as recorded (missing hours null), or ``gap_filled``, like-for-like with the release: the
missing hours filled by the release's own rule (:func:`mimic_deid.deid.missing.fill_missing_hours`,
applied to the series of one split and one length, as to a duration class of ``ihm48``)."""

KEY_COLUMNS: tuple[str, ...] = (
    "task",
    "variables",
    "cross",
    "setting",
    "train_data",
    "test_data",
    "split",
)
"""The columns that identify a row of the utility table (``trust_settings.csv``)."""

SETTINGS: tuple[tuple[str, str, str], ...] = (
    ("orig. / orig.", "orig", "orig"),
    ("de-id. / de-id.", "deid", "deid"),
    ("orig. / de-id.", "orig", "deid"),
    ("de-id. / orig.", "deid", "orig"),
)
"""(label as in seed Tables 6.3/6.4, training-data side, test-data side)."""

#: Seed 000, Table 6.3 (split ``train``) and Table 6.4 (split ``test``): in-hospital mortality
#: ROC-AUC and PR-AUC per trust setting, in :data:`SETTINGS` order (orig. / orig.,
#: de-id. / de-id., orig. / de-id., de-id. / orig.).
SEED_TRUST_SETTINGS: dict[tuple[str, str], tuple[float, float, float, float]] = {
    ("train", "roc_auc"): (0.87, 0.87, 0.86, 0.64),
    ("train", "pr_auc"): (0.54, 0.54, 0.51, 0.22),
    ("test", "roc_auc"): (0.85, 0.83, 0.82, 0.64),
    ("test", "pr_auc"): (0.49, 0.45, 0.40, 0.22),
}


# --------------------------------------------------------------------------------------------
# trust settings


def _as_dataset(value: tuple, where: str) -> Dataset:
    """Accept ``(X_feat, y)`` or ``(X (n, L, D), lengths, y)`` (features computed here)."""
    if len(value) == 2:
        return np.asarray(value[0], dtype=np.float64), np.asarray(value[1])
    if len(value) == 3:
        X, lengths, y = value
        return benchmark_features(X, lengths), np.asarray(y)
    raise InputDataError(f"utility {where}: expected (X_feat, y) or (X, lengths, y)")


_SIDE_NAMES = {
    "orig": "original",
    "all": "original",
    "shipped": "original",
    "gap_filled": "original",
    "deid": "de-identified",
}


def _side_data(splits: Mapping[str, tuple], side: str) -> dict[str, Dataset]:
    """The splits of one side that hold series; a split absent or empty (a release that could
    not publish it, :func:`mimic_deid.deid.duration.unpublished_groups`) is left out, and the
    rows that need it are not computable (:func:`_not_computable`)."""
    out = {}
    for s in ("train", "validation", "test"):
        if s in splits:
            data = _as_dataset(splits[s], f"{side} {s}")
            if len(data[1]):
                out[s] = data
    return out


def _not_computable(
    side: str, split: str, n: int = 0, labels: Sequence = (), needs: str = "a model"
) -> str:
    name = _SIDE_NAMES.get(side, side)
    if not n:
        return f"not computable: the {name} data hold no series of split '{split}'"
    return (
        f"not computable: the {name} {split} split holds one label ({labels[0]}) in {n} "
        f"series; {needs} needs both"
    )


#: A fitted model of one training side: (pipeline, chosen C, validation ROC-AUC at that C),
#: or (None, NaN, NaN, reason) where no model can be fitted.
_Fitted = tuple


def _fit_side(splits: Mapping[str, Dataset], Cs: Sequence[float], seed: int, side: str) -> _Fitted:
    from sklearn.metrics import roc_auc_score

    key = side.split()[-1]
    for needed in ("train", "validation"):
        if needed not in splits:
            reason = _not_computable(key, needed)
            log.warning("%s: %s", side, reason)
            return None, math.nan, math.nan, reason
    y_tr = splits["train"][1]
    if len(np.unique(y_tr)) < 2:
        reason = _not_computable(key, "training", len(y_tr), np.unique(y_tr).tolist())
        log.warning("%s: %s", side, reason)
        return None, math.nan, math.nan, reason
    model, C = fit_mortality_model(splits["train"], splits["validation"], Cs, seed)
    X_va, y_va = splits["validation"]
    val_auc = (
        float(roc_auc_score(y_va, model.predict_proba(X_va)[:, 1]))
        if len(np.unique(y_va)) == 2
        else float("nan")
    )
    log.info("%s training data: chose C=%g (validation ROC-AUC %s)", side, C, fmt_auc(val_auc))
    return model, C, val_auc, ""


def _setting_rows(
    settings: Sequence[tuple[str, str, str]],
    models: Mapping[str, _Fitted],
    data: Mapping[str, Mapping[str, Dataset]],
    seed: int,
    n_bootstrap: int,
) -> list[dict]:
    """One row per (setting, split ``train``/``test``): ``models[train side]`` scored on the
    ``data`` of the test side; one model is fitted per training side (:func:`_fit_side`).

    Decisions:

    - **Validation side = training side.** C is chosen on the validation split from the same
      side as the training data: the model builder tunes on data like the data it trains on
      and never sees the test party's data before testing (in the de-id./orig. setting the
      builder only holds de-identified data, seed 5.7's "stolen" validation set).
    - **Evaluated data = test side.** The ``train`` row of a setting scores the model on the
      training split *as the test party holds it* (e.g. de-id. / orig. scores the
      de-identified-trained model on the original training split). This is how seed Table 6.3
      reads: its de-id. / orig. training ROC-AUC (0.64) equals the test one, far below the
      de-id. / de-id. training value, which a model scored on its own training data could not
      show. The ``test`` row scores the test split of the test side.
    - Bootstrap resampling uses ``seed`` for every row, so rows on the same data are paired.
    """
    rows = []
    for label, train_side, test_side in settings:
        model, C, val_auc, reason = models[train_side]
        for split in ("train", "test"):
            why = reason
            if not reason and split not in data[test_side]:
                why = _not_computable(test_side, split)
            elif not reason and len(one := np.unique(data[test_side][split][1])) < 2:
                y = data[test_side][split][1]
                why = _not_computable(test_side, split, len(y), one.tolist(), "an AUC")
            if why:
                metrics = dict.fromkeys(SCORE_COLUMNS, math.nan)
                metrics["n"] = len(data[test_side][split][1]) if split in data[test_side] else 0
                metrics["positives"] = (
                    int(data[test_side][split][1].sum()) if split in data[test_side] else 0
                )
            else:
                X, y = data[test_side][split]
                metrics = evaluate_model(model, X, y, n_bootstrap=n_bootstrap, seed=seed)
            rows.append(
                {
                    "setting": label,
                    "train_data": train_side,
                    "test_data": test_side,
                    "split": split,
                    "C": C,
                    "validation_roc_auc": val_auc,
                    **metrics,
                    "not_computable": why,
                }
            )
    return rows


def _frame(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows).astype({"n": "int64", "positives": "int64"})


def utility_table(
    series: pd.DataFrame,
    meta: pd.DataFrame,
    release_series: pd.DataFrame,
    release_index: pd.DataFrame,
    Cs: Sequence[float] = DEFAULT_CS,
    n_bootstrap: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """The data owner's baseline and the four trust settings (seed 5.7) of an ``ihm48`` release, shipped
    and like-for-like (:data:`VARIABLES`, :data:`CROSS`).

    Parameters
    ----------
    series, meta : DataFrame
        The original ``ihm48`` series (icustay_id, hour, one column per series variable) and
        their meta table (icustay_id, length, split and each task's label column,
        :data:`TASKS`).
    release_series, release_index : DataFrame
        The release (pseudonym, hour, the published variables) and its index (pseudonym,
        duration_class, split, each task's label column).
    Cs, n_bootstrap, seed
        Candidate C values, bootstrap resamples, and the seed of every row's bootstrap
        (:func:`fit_mortality_model`, :func:`evaluate_model`).

    Returns
    -------
    DataFrame (``trust_settings.csv``), per task of :data:`TASKS`: 2 rows of the data owner's
    baseline (``variables`` ``all``, ``cross`` ``shipped``, ``setting`` ``orig. / orig.``,
    split ``train``/``test``), then the 8 rows of the trust settings (:func:`_setting_rows`) on the released
    variables with the original side as recorded (``cross`` ``shipped``), then the same 8
    with the original side gap-filled (``cross`` ``gap_filled``; its de-id. / de-id. rows
    equal the shipped ones). Columns :data:`KEY_COLUMNS`, ``C``, ``validation_roc_auc``,
    then ``METRIC_COLUMNS``, then ``not_computable`` (why a row's metrics are NaN): a release
    without one of its splits, or an original side too small for a model, gives rows of NaN
    metrics with the reason instead of stopping the run.
    """
    released = [c for c in release_series.columns if c not in ("pseudonym", "hour")]
    every = [c for c in series.columns if c not in ("icustay_id", "hour")]
    if missing := sorted(set(released) - set(every)):
        raise InputDataError(
            f"utility: released variable(s) {missing} are not columns of the original series; "
            f"expected a subset of {every}"
        )
    frames = []
    for task, (meta_col, index_col) in TASKS.items():

        def original(dims: list[str], fill=None, label: str = meta_col) -> dict:
            return datasets_from_long(
                series, meta, "icustay_id", dims, label, length_col="length", fill=fill
            )

        data = {
            "all": original(every),
            "shipped": original(released),
            "gap_filled": original(released, fill=fill_missing_hours),
            "deid": datasets_from_long(
                release_series,
                release_index,
                "pseudonym",
                released,
                label_col=index_col,
                length_col="duration_class",
            ),
        }
        data = {side: _side_data(splits, side) for side, splits in data.items()}
        models = {side: _fit_side(d, Cs, seed, f"{task} {side}") for side, d in data.items()}
        parts = [("all", "shipped", SETTINGS[:1], "all")]
        parts += [("released", cross, SETTINGS, cross) for cross in CROSS]
        for variables, cross, settings, orig_side in parts:
            rows = _setting_rows(
                settings,
                {"orig": models[orig_side], "deid": models["deid"]},
                {"orig": data[orig_side], "deid": data["deid"]},
                seed,
                n_bootstrap,
            )
            keys = {"task": task, "variables": variables, "cross": cross}
            frames.append(_frame([{**keys, **row} for row in rows]))
    table = pd.concat(frames, ignore_index=True)
    for row in table.itertuples():
        log.info("%s, %s variables, %s: %s on %s: ROC-AUC %s", row.task, row.variables,
                 row.cross, row.setting, row.split, fmt_auc(row.roc_auc))  # fmt: skip
    return table


# --------------------------------------------------------------------------------------------
# tables
