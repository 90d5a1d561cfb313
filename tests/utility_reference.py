"""The four trust settings of one task from in-memory splits, for the tests only (the
workflow's ``evaluate.utility.utility_table`` runs them with the data owner's baseline and the
gap-filled original side)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from mimic_deid.core.errors import InputDataError
from mimic_deid.evaluate.utility import (
    DEFAULT_CS,
    SETTINGS,
    _fit_side,
    _frame,
    _setting_rows,
    _side_data,
)


def trust_settings(
    original: Mapping[str, tuple],
    deidentified: Mapping[str, tuple],
    Cs: Sequence[float] = DEFAULT_CS,
    seed: int = 0,
    n_bootstrap: int = 1000,
) -> pd.DataFrame:
    """In-hospital-mortality model performance under the four trust settings (seed 5.7).

    One model is fitted per training side (original, de-identified) with
    :func:`fit_mortality_model` and evaluated on both sides.

    The decisions (validation side, evaluated data, paired bootstrap) are those of
    :func:`mimic_deid.evaluate.utility._setting_rows`.

    Parameters
    ----------
    original, deidentified : mapping split -> (X_feat, y) or (X, lengths, y)
        Splits ``train``, ``validation`` and ``test``; ``X_feat`` (n, n_features) with the
        same features on both sides (e.g. :func:`benchmark_features`), or hourly arrays
        ``X`` (n, L, D) + ``lengths`` (n,) from which they are computed; ``y`` 0/1 labels.
        De-identified splits may hold fewer series (suppressed ones are absent).
    Cs : candidate C values; seed : int; n_bootstrap : int
        See :func:`fit_mortality_model` and :func:`evaluate_model`.

    Returns
    -------
    DataFrame, 8 rows (``SETTINGS`` order x split ``train``, ``test``), columns:
    ``setting`` (label as in the seed tables), ``train_data``, ``test_data`` (``orig``/``deid``),
    ``split``, ``C`` (chosen), ``validation_roc_auc`` (at the chosen C), then
    ``METRIC_COLUMNS``, then ``not_computable``: empty, or why the row's metrics are NaN
    (``not computable: ...``: a split the release does not publish, a training split of one
    label); n and positives then count the evaluated split as held (0 when absent).
    """
    data = {"orig": _side_data(original, "orig"), "deid": _side_data(deidentified, "deid")}
    widths = {d[0].shape[1] for splits in data.values() for d in splits.values()}
    widths = widths or {0}
    if len(widths) != 1:
        raise InputDataError(f"utility: feature counts differ between splits/sides: {widths}")
    models = {side: _fit_side(data[side], Cs, seed, side) for side in ("orig", "deid")}
    return _frame(_setting_rows(SETTINGS, models, data, seed, n_bootstrap))
