"""The demographics table of seed 003 §3.1 / §6.1.3 and the procedure sequences of §3.2.

:func:`demographics` joins PATIENTS and ADMISSIONS, keeps each subject's first admission
(earliest ADMITTIME, then smallest HADM_ID), replaces the unreliable date of birth by a year of
birth drawn from N(mean, sd) and rounded (one draw per subject in SUBJECT_ID order, from the
generator given), adds the first ``n_procedures`` procedure codes of that admission pivoted by
SEQ_NUM (``proc_1 ..``). A missing demographic value (real MIMIC-III ADMISSIONS: LANGUAGE
empty in 37.2 % of admissions, MARITAL_STATUS 12.4 %, RELIGION 0.8 %) is by default a category
of its own, :data:`~mimic_deid.deid.hierarchy.MISSING` (``?``, placed in the hierarchies
like any value); with ``missing="drop"`` the row is dropped, as the seed does. A row without
all ``n_procedures`` procedures is always dropped (seed §3.2 studies admissions with that many
procedures). The draw happens before any drop, so a subject keeps the same year of birth
whatever ``n_procedures`` is (the seed reuses the draw for model D).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from mimic_deid.core.errors import ConfigError, require_choice, require_columns
from mimic_deid.deid.hierarchy import MISSING

__all__ = [
    "DEMOGRAPHIC_QIS",
    "MISSING_RULES",
    "admission_sequences",
    "demographics",
    "first_admissions",
    "pivot_procedures",
    "procedure_columns",
]

#: The quasi-identifiers of seed 003 §3.1, in lattice order.
DEMOGRAPHIC_QIS = ("yob", "gender", "insurance", "language", "religion", "marital_status")
#: What :func:`demographics` does with a missing demographic value (``tabular.missing``).
MISSING_RULES = ("category", "drop")


def procedure_columns(n: int) -> list[str]:
    """``["proc_1", ..., "proc_<n>"]``."""
    return [f"proc_{i}" for i in range(1, n + 1)]


def pivot_procedures(procedures: pd.DataFrame, positions: Sequence[int]) -> pd.DataFrame:
    """One row per admission, one column ``proc_<s>`` per SEQ_NUM ``s`` in ``positions``.

    Parameters
    ----------
    procedures : DataFrame
        PROCEDURES_ICD rows: ``hadm_id``, ``seq_num``, ``icd9_code``.
    positions : sequence of int
        The SEQ_NUMs kept (1-based).

    Returns
    -------
    DataFrame
        Indexed by ``hadm_id`` (every admission with at least one kept position); a missing
        position is NA. A repeated (hadm_id, seq_num) keeps its first code in sorted order.
    """
    require_columns(procedures, ["hadm_id", "seq_num", "icd9_code"], "table procedures_icd")
    rows = procedures[procedures["seq_num"].isin(list(positions))]
    rows = rows.sort_values(["hadm_id", "seq_num", "icd9_code"], kind="stable")
    rows = rows.drop_duplicates(["hadm_id", "seq_num"])
    wide = rows.pivot(index="hadm_id", columns="seq_num", values="icd9_code")
    wide = wide.reindex(columns=list(positions))
    wide.columns = [f"proc_{s}" for s in positions]
    return wide


def first_admissions(patients: pd.DataFrame, admissions: pd.DataFrame) -> pd.DataFrame:
    """PATIENTS joined with each subject's first admission, sorted by ``subject_id``."""
    require_columns(patients, ["subject_id", "gender"], "table patients")
    require_columns(
        admissions,
        [
            "subject_id",
            "hadm_id",
            "admittime",
            "insurance",
            "language",
            "religion",
            "marital_status",
        ],
        "table admissions",
    )
    adm = admissions.sort_values(["subject_id", "admittime", "hadm_id"], kind="stable")
    adm = adm.drop_duplicates("subject_id", keep="first")
    joined = patients[["subject_id", "gender"]].merge(adm, on="subject_id", how="inner")
    return joined.sort_values("subject_id", kind="stable").reset_index(drop=True)


def demographics(
    patients: pd.DataFrame,
    admissions: pd.DataFrame,
    procedures: pd.DataFrame | None,
    n_procedures: int,
    rng: np.random.Generator,
    yob_mean: float = 1980.0,
    yob_sd: float = 33.0,
    missing: str = "category",
) -> pd.DataFrame:
    """The seed's demographics table with ``n_procedures`` procedures (0: demographics only).

    Parameters
    ----------
    patients, admissions, procedures : DataFrame
        As read by the tabular extraction (``procedures`` may be None when
        ``n_procedures == 0``).
    n_procedures : int
        Procedures kept per admission (seed: 3; model D: 5).
    rng : numpy.random.Generator
        Draws the years of birth, ``shape (n_subjects,)``, in SUBJECT_ID order.
    yob_mean, yob_sd : float
        The normal law of the year of birth (seed §6.1.3: 1980 and 33 years).
    missing : {"category", "drop"}
        A missing demographic value becomes the category ``?`` (default), or drops its row.

    Returns
    -------
    DataFrame
        ``subject_id``, ``hadm_id`` (private keys), ``yob`` (int64), the other
        :data:`DEMOGRAPHIC_QIS` (str) and ``proc_1 .. proc_<n>`` (str); no missing value;
        sorted by ``subject_id``.

    Raises
    ------
    InputDataError
        A table lacks a column (named).
    ConfigError
        ``n_procedures < 0``, ``yob_sd <= 0`` or ``missing`` not in :data:`MISSING_RULES`.
    """
    if (
        isinstance(n_procedures, bool)
        or not isinstance(n_procedures, int | np.integer)
        or n_procedures < 0
    ):
        raise ConfigError(f"parameter 'procedures' must be an integer >= 0, got {n_procedures!r}")
    if not yob_sd > 0:
        raise ConfigError(f"parameter 'yob_sd' must be > 0, got {yob_sd!r}")
    require_choice(missing, MISSING_RULES, "parameter 'missing'")
    base = first_admissions(patients, admissions)
    base["yob"] = np.rint(rng.normal(yob_mean, yob_sd, len(base))).astype(np.int64)
    cols = ["subject_id", "hadm_id", *DEMOGRAPHIC_QIS]
    table = base[cols]
    if missing == "category":
        qis = list(DEMOGRAPHIC_QIS[1:])  # yob is drawn, never missing
        table = table.assign(
            **{c: table[c].astype(object).where(table[c].notna(), MISSING) for c in qis}
        )
    if n_procedures:
        if procedures is None:
            raise ConfigError("parameter 'procedures' > 0 needs the procedures_icd table")
        wide = pivot_procedures(procedures, range(1, n_procedures + 1))
        table = table.merge(wide, left_on="hadm_id", right_index=True, how="left")
    table = table.dropna().reset_index(drop=True)
    for c in table.columns:
        if c not in ("subject_id", "hadm_id", "yob"):
            table[c] = table[c].astype(str)
    return table


def admission_sequences(
    procedures: pd.DataFrame, positions: Sequence[int], ordered: bool = True
) -> np.ndarray:
    """Procedure codes at SEQ_NUMs ``positions`` of every admission having all of them.

    Parameters
    ----------
    procedures : DataFrame
        PROCEDURES_ICD rows.
    positions : sequence of int
        SEQ_NUMs, e.g. ``(1, 2, 3)`` or ``(1, 5)`` (seed §3.2).
    ordered : bool
        False: each row's codes are sorted (the unordered set of §3.2).

    Returns
    -------
    ndarray of str, shape (n_admissions, len(positions))
    """
    wide = pivot_procedures(procedures, positions).dropna()
    codes = wide.to_numpy(dtype=str)
    return codes if ordered else np.sort(codes, axis=1)
