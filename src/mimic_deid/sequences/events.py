"""Transactional sequential datasets (seed 004 §2.1, Definition 1) from TRANSFERS and CPTEVENTS.

An :class:`EventLog` holds records ``<object, time, state>`` sorted by object and time, with
states coded into a vocabulary. Two readers build one from the MIMIC-III tables:

- TRANSFERS: object = SUBJECT_ID, time = INTIME, state = CURR_CAREUNIT, or ``WARD`` for a
  general-ward row (no care unit); ``discharge`` rows (no unit, no ward) end a stay and are not
  states.
- CPTEVENTS: object = SUBJECT_ID, state = CPT_CD; the table has no usable times, so the time
  is fabricated from the order of procedures (seed §5): one hour per step along
  (HADM_ID, TICKET_ID_SEQ). Rows of cost centres that carry a CHARTDATE instead of a
  TICKET_ID_SEQ (real MIMIC-III: COSTCENTER ``Resp``, 18.4 % of rows, never both) have no
  place in that order and are dropped, counted in :attr:`EventLog.dropped_unticketed`.
- VITALS (optional): the project's hourly ``stays`` series of one variable; object = ICU stay,
  time = hour since the stay's first recording, state = the SAX symbol of the hour's value
  z-normalised within its stay (``deid.sax``: equiprobable N(0, 1) breakpoints, ``a`` =
  lowest); hours without a value are not records.

Objects with a single record carry no transition and are dropped (counted in
:attr:`EventLog.dropped_short`); :func:`check_log` rejects a log that still has one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mimic_deid.core.errors import ConfigError, InputDataError, require_choice, require_columns

__all__ = [
    "CAREUNITS",
    "vital_events",
    "CPT_PATTERN",
    "MISSING_TIMES",
    "EventLog",
    "check_log",
    "cpt_events",
    "transfer_events",
]

#: Care units of MIMIC-III v1.4 TRANSFERS, plus ``WARD`` for general-ward rows.
CAREUNITS = ("CCU", "CSRU", "MICU", "NICU", "NWARD", "SICU", "TSICU", "WARD")
#: A CPT code: five digits, or four digits and a category-II/III letter.
CPT_PATTERN = re.compile(r"^[0-9]{4}[0-9A-Z]$")
#: What to do with rows whose time (INTIME, TICKET_ID_SEQ) is missing.
MISSING_TIMES = ("error", "drop")


@dataclass(frozen=True)
class EventLog:
    """Records of a sequential dataset, sorted by (object, time).

    Attributes
    ----------
    table : str
        Source table name, for messages (``TRANSFERS`` or ``CPTEVENTS``).
    obj : ndarray of int64, shape (n,)
        Object of each record (dense codes 0 .. n_objects - 1, in source id order).
    time : ndarray of float64, shape (n,)
        Hours since 1970-01-01 (fabricated steps of 1 h for CPTEVENTS).
    state : ndarray of int64, shape (n,)
        Codes into ``states``.
    states : tuple of str
        The state vocabulary, sorted.
    dropped_short : int
        Objects dropped for having a single record.
    dropped_missing : int
        Rows dropped for a missing time (``missing_times: drop``).
    dropped_unticketed : int
        CPTEVENTS rows without TICKET_ID_SEQ that carry a CHARTDATE (always dropped).
    """

    table: str
    obj: np.ndarray
    time: np.ndarray
    state: np.ndarray
    states: tuple[str, ...]
    dropped_short: int = 0
    dropped_missing: int = 0
    dropped_unticketed: int = 0

    @property
    def n_objects(self) -> int:
        return int(self.obj.max()) + 1 if len(self.obj) else 0

    def to_frame(self) -> pd.DataFrame:
        """object (int64), time (float64 h), state (categorical over ``states``)."""
        return pd.DataFrame(
            {
                "object": self.obj,
                "time": self.time,
                "state": pd.Categorical.from_codes(self.state, self.states),
            }
        )

    @classmethod
    def from_frame(cls, df: pd.DataFrame, table: str) -> EventLog:
        """The log written by :meth:`to_frame` (checked with :func:`check_log`)."""
        require_columns(df, ["object", "time", "state"], f"{table} records")
        state = df["state"].astype("category")
        log = cls(
            table=table,
            obj=df["object"].to_numpy(np.int64),
            time=df["time"].to_numpy(np.float64),
            state=state.cat.codes.to_numpy().astype(np.int64),
            states=tuple(str(c) for c in state.cat.categories),
        )
        check_log(log)
        return log


def _check_mode(missing_times: str) -> None:
    require_choice(missing_times, MISSING_TIMES, "sequences: parameter 'missing_times'")


def _require_rows(df: pd.DataFrame, table: str, what: str = "") -> None:
    if len(df) == 0:
        rows = f"{what} rows" if what else "rows"
        raise InputDataError(
            f"{table}: the table has no {rows}; the sequences stage needs at least one "
            "object with two records (nothing would be released)"
        )


def _data_rows(df: pd.DataFrame, mask: np.ndarray, shown: int = 5) -> str:
    """The first 1-based data rows of ``df`` (as read: index = row - 1) where ``mask`` holds;
    messages name rows, never the values (logs hold no patient data)."""
    rows = df.index.to_numpy()[np.asarray(mask, dtype=bool)][:shown] + 1
    return "first data rows: " + ", ".join(str(int(r)) for r in rows)


def _missing(df: pd.DataFrame, column: str, table: str, missing_times: str) -> pd.DataFrame:
    gone = df[column].isna().to_numpy()
    if gone.any() and missing_times == "error":
        raise InputDataError(
            f"{table}: column '{column}' is missing in {int(gone.sum())} of {len(df)} rows; "
            "every record needs a time (set sequences.missing_times: drop to drop those rows)"
        )
    return df.loc[~gone]


def _build(
    table: str,
    obj_id: np.ndarray,
    time: np.ndarray,
    labels: np.ndarray,
    dropped_missing: int,
    dropped_unticketed: int = 0,
) -> EventLog:
    order = np.lexsort((labels, time, obj_id))
    obj_id, time, labels = obj_id[order], time[order], labels[order]
    ids, obj, counts = np.unique(obj_id, return_inverse=True, return_counts=True)
    keep = counts[obj] >= 2
    dropped = int((counts < 2).sum())
    obj_id, time, labels = obj_id[keep], time[keep], labels[keep]
    if len(obj_id) == 0:
        raise InputDataError(
            f"{table}: no object has two or more records ({dropped} single-record objects); "
            "a sequence needs at least one transition (nothing would be released)"
        )
    _, obj = np.unique(obj_id, return_inverse=True)
    states, state = np.unique(labels, return_inverse=True)
    return EventLog(
        table=table,
        obj=obj.astype(np.int64),
        time=time.astype(np.float64),
        state=state.astype(np.int64),
        states=tuple(str(s) for s in states),
        dropped_short=dropped,
        dropped_missing=dropped_missing,
        dropped_unticketed=dropped_unticketed,
    )


def transfer_events(df: pd.DataFrame, missing_times: str = "error") -> EventLog:
    """The care-unit/ward sequences of TRANSFERS (seed 004 §5).

    Parameters
    ----------
    df : DataFrame
        TRANSFERS as read by ``read_table("transfers")``: subject_id, eventtype,
        curr_careunit, curr_wardid, intime.
    missing_times : {"error", "drop"}
        A row without INTIME raises ``InputDataError``, or is dropped.

    Returns
    -------
    EventLog

    Raises
    ------
    InputDataError
        Missing columns, an empty table, an unknown care unit, a missing INTIME (``error``),
        or no object with two records.
    """
    _check_mode(missing_times)
    require_columns(
        df, ["subject_id", "eventtype", "curr_careunit", "curr_wardid", "intime"], "TRANSFERS"
    )
    _require_rows(df, "TRANSFERS")
    unit = df["curr_careunit"].astype("string")
    stay = unit.notna() | df["curr_wardid"].notna()
    df = df.loc[stay.to_numpy() & (df["eventtype"].astype("string") != "discharge").to_numpy()]
    _require_rows(df, "TRANSFERS", "care-unit or ward")
    n0 = len(df)
    df = _missing(df, "intime", "TRANSFERS", missing_times)
    labels = df["curr_careunit"].astype("string").fillna("WARD").to_numpy(dtype=object)
    unknown = ~np.isin(labels, list(CAREUNITS))
    if unknown.any():
        raise InputDataError(
            f"TRANSFERS: column 'curr_careunit' holds {int(unknown.sum())} unknown state(s) "
            f"({_data_rows(df, unknown)}); expected one of {list(CAREUNITS)} (WARD = a "
            "general-ward row)"
        )
    hours = df["intime"].to_numpy().astype("datetime64[s]").astype(np.int64) / 3600.0
    return _build(
        "TRANSFERS", df["subject_id"].to_numpy(np.int64), hours, labels.astype(str), n0 - len(df)
    )


def cpt_events(df: pd.DataFrame, missing_times: str = "error") -> EventLog:
    """The procedure sequences of CPTEVENTS, ordered by TICKET_ID_SEQ (seed 004 §5).

    Parameters
    ----------
    df : DataFrame
        CPTEVENTS as read by ``read_table("cptevents")``: subject_id, hadm_id, chartdate,
        cpt_cd, ticket_id_seq.
    missing_times : {"error", "drop"}
        A row with neither TICKET_ID_SEQ nor CHARTDATE raises ``InputDataError``, or is
        dropped.

    Returns
    -------
    EventLog
        Times are fabricated: the k-th procedure of an object (0-based, ordered by HADM_ID
        then TICKET_ID_SEQ) is at k hours. Rows without TICKET_ID_SEQ but with a CHARTDATE
        (whole cost centres of real MIMIC-III, e.g. ``Resp``) are dropped whatever
        ``missing_times`` is and counted in ``dropped_unticketed``: the seed orders CPTEVENTS
        by TICKET_ID_SEQ (§5), and a day cannot be placed among ticket numbers, which carry
        no date.

    Raises
    ------
    InputDataError
        Missing columns, an empty table, a CPT code that is not five characters
        (``dddd[d|A-Z]``), a missing TICKET_ID_SEQ (``error``), or no object with two records.
    """
    _check_mode(missing_times)
    require_columns(
        df, ["subject_id", "hadm_id", "chartdate", "cpt_cd", "ticket_id_seq"], "CPTEVENTS"
    )
    _require_rows(df, "CPTEVENTS")
    unticketed = (df["ticket_id_seq"].isna() & df["chartdate"].notna()).to_numpy()
    df = df.loc[~unticketed]
    if len(df) == 0:
        raise InputDataError(
            f"CPTEVENTS: none of the {len(unticketed)} rows has a TICKET_ID_SEQ (all carry a "
            "CHARTDATE only); the sequences stage orders procedures by TICKET_ID_SEQ (seed 004 "
            "§5), so nothing would be released"
        )
    n0 = len(df)
    df = _missing(df, "ticket_id_seq", "CPTEVENTS", missing_times)
    codes = df["cpt_cd"].astype("string").fillna("").str.strip().to_numpy(dtype=object)
    bad = np.array([CPT_PATTERN.match(c) is None for c in codes], dtype=bool)
    if bad.any():
        raise InputDataError(
            f"CPTEVENTS: column 'cpt_cd' holds {int(bad.sum())} unknown state(s) "
            f"({_data_rows(df, bad)}); expected CPT codes of five characters (four digits and a "
            "digit or capital letter)"
        )
    subj = df["subject_id"].to_numpy(np.int64)
    order = np.lexsort(
        (df["ticket_id_seq"].to_numpy(np.int64), df["hadm_id"].to_numpy(np.int64), subj)
    )
    subj, codes = subj[order], codes[order].astype(str)
    start = np.r_[True, subj[1:] != subj[:-1]]
    first = np.maximum.accumulate(np.where(start, np.arange(len(subj)), 0))
    step = (np.arange(len(subj)) - first).astype(np.float64)
    return _build("CPTEVENTS", subj, step, codes, n0 - len(df), int(unticketed.sum()))


def check_log(log: EventLog) -> None:
    """Raise ``InputDataError`` unless every object of ``log`` has two or more records.

    Also checks the arrays' shapes and that times are finite and non-decreasing per object.
    """
    n = len(log.obj)
    if not (len(log.time) == len(log.state) == n) or n == 0:
        raise InputDataError(
            f"{log.table}: obj, time and state must be non-empty arrays of one length, got "
            f"{len(log.obj)}, {len(log.time)}, {len(log.state)}"
        )
    if not np.isfinite(log.time).all():
        raise InputDataError(
            f"{log.table}: {int((~np.isfinite(log.time)).sum())} records have a missing time"
        )
    if log.state.min() < 0 or log.state.max() >= len(log.states):
        raise InputDataError(
            f"{log.table}: state codes must lie in 0..{len(log.states) - 1} (the vocabulary)"
        )
    counts = np.bincount(log.obj)
    short = int(((counts > 0) & (counts < 2)).sum())
    if short:
        raise InputDataError(
            f"{log.table}: {short} sequence(s) of length < 2; every object needs at least two "
            "records (one transition)"
        )
    same = log.obj[1:] == log.obj[:-1]
    if (np.diff(log.obj) < 0).any() or (np.diff(log.time)[same] < 0).any():
        raise InputDataError(f"{log.table}: records must be sorted by object and time")


def vital_events(series: pd.DataFrame, variable: str, level: int = 4) -> EventLog:
    """Hourly SAX states of one vital sign (the optional third input of seed 004's stage).

    Parameters
    ----------
    series : DataFrame
        The ``stays`` release's hourly series: icustay_id, hour and one column per variable.
    variable : str
        The variable, e.g. ``heart_rate``.
    level : int
        SAX alphabet size, 2 .. 26.

    Returns
    -------
    EventLog
        Table ``VITALS``; times are the hours since each stay's first recording.

    Raises
    ------
    InputDataError
        The variable is not a column, or no stay has two hours with a value.
    ConfigError
        A SAX level outside 2 .. 26.
    """
    from mimic_deid.deid.sax import MAX_LEVEL, sax_codes

    if isinstance(level, bool) or not isinstance(level, int) or not 2 <= level <= MAX_LEVEL:
        raise ConfigError(
            f"sequences.vitals: level must be an integer in [2, {MAX_LEVEL}], got {level!r}"
        )
    require_columns(series, ["icustay_id", "hour", variable], "VITALS (stays series)")
    df = series.loc[series[variable].notna(), ["icustay_id", "hour", variable]]
    _require_rows(df, "VITALS", f"'{variable}'")
    stay = df["icustay_id"].to_numpy(np.int64)
    x = df[variable].to_numpy(np.float64)
    _, inv, n = np.unique(stay, return_inverse=True, return_counts=True)
    mean = (np.bincount(inv, weights=x) / n)[inv]
    sd = np.sqrt(np.maximum((np.bincount(inv, weights=x * x) / n)[inv] - mean**2, 0.0))
    flat = sd < 1e-8 * np.maximum(1.0, np.abs(mean))  # a constant stay has no shape: all zeros
    z = np.where(flat, 0.0, (x - mean) / np.where(flat, 1.0, sd))
    labels = np.array([chr(97 + c) for c in range(level)])[sax_codes(z, level)]
    hours = df["hour"].to_numpy(np.float64)
    return _build("VITALS", stay, hours, labels, 0)
