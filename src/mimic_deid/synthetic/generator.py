"""Driver: generate blocks of subjects and stream them into the CSV.gz tables atomically."""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mimic_deid.core.atomic import atomic_dir
from mimic_deid.core.errors import ConfigError
from mimic_deid.core.logs import Progress, get_logger
from mimic_deid.core.seeding import derive_rng
from mimic_deid.synthetic import catalog, diagnoses, population
from mimic_deid.synthetic.chart import ChartBuilder, num_to_string
from mimic_deid.synthetic.labs import lab_events, lab_flags
from mimic_deid.synthetic.outputs import output_events
from mimic_deid.synthetic.physiology import Physiology
from mimic_deid.synthetic.population import DAY, MINUTE, IdState, Population, make_population
from mimic_deid.synthetic.procedures import procedures_icd
from mimic_deid.synthetic.quirks import add_other_chart_rows, admission_gaps, check_other_chart_rows
from mimic_deid.synthetic.sequences import sequence_tables
from mimic_deid.synthetic.writer import LAYOUTS, TableWriter, floats, ints, nulls, strings, times

log = get_logger(__name__)

BLOCK_SUBJECTS = 100  # subjects per random stream: output does not depend on chunk_subjects
SUMMARY_FILE = "SYNTHETIC.json"
TABLES = tuple(LAYOUTS)

_UOM_IDS, _UOM_NAMES = catalog.uom_lookup()
_UOM_IDS_ARR = np.array(_UOM_IDS, dtype=np.int64)
_LAB_IDS = np.array([it.itemid for it in catalog.LAB_ITEMS], dtype=np.int64)
_LAB_UOMS = [it.uom for it in catalog.LAB_ITEMS]


def _check_int(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ConfigError(
            f"synthetic generator: parameter '{name}' must be an integer >= {minimum}, "
            f"got {value!r}"
        )
    return int(value)


def _check_out_dir(out_dir: str | os.PathLike) -> Path:
    dest = Path(out_dir)
    if dest.exists() and not dest.is_dir():
        raise ConfigError(f"synthetic generator: out_dir '{dest}' exists and is not a directory")
    if dest.is_dir() and any(dest.iterdir()) and not (dest / SUMMARY_FILE).exists():
        raise ConfigError(
            f"synthetic generator: out_dir '{dest}' is a non-empty directory that is not a "
            f"previous synthetic output (no {SUMMARY_FILE}); refusing to replace it"
        )
    parent = dest.absolute().parent
    blocking = next((p for p in (parent, *parent.parents) if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        raise ConfigError(
            f"synthetic generator: out_dir '{dest}' is not writable: '{blocking}' is a file, "
            "not a directory"
        )
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"synthetic generator: out_dir '{dest}' is not writable: cannot create '{parent}' "
            f"({exc.strerror or exc})"
        ) from exc
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ConfigError(
            f"synthetic generator: out_dir '{dest}': parent '{parent}' is not writable"
        )
    return dest


def _uom(itemid: np.ndarray) -> pa.Array:
    return strings(_UOM_NAMES, np.searchsorted(_UOM_IDS_ARR, itemid))


def _dictionary_tables(other_items: bool) -> dict[str, dict[str, pa.Array]]:
    items = catalog.D_ITEMS_WITH_OTHER if other_items else catalog.D_ITEMS
    mv = [it.dbsource == "metavision" for it in items]
    d_items = {
        "ITEMID": pa.array([it.itemid for it in items], pa.int64()),
        "LABEL": pa.array([it.label for it in items], pa.string()),
        "ABBREVIATION": pa.array(
            [it.abbreviation if m else None for it, m in zip(items, mv, strict=True)], pa.string()
        ),
        "DBSOURCE": pa.array([it.dbsource for it in items], pa.string()),
        "LINKSTO": pa.array([it.linksto for it in items], pa.string()),
        "CATEGORY": pa.array(
            [it.category if m else None for it, m in zip(items, mv, strict=True)], pa.string()
        ),
        "UNITNAME": pa.array(
            [
                it.uom if m and it.param_type == "Numeric" else None
                for it, m in zip(items, mv, strict=True)
            ],
            pa.string(),
        ),
        "PARAM_TYPE": pa.array(
            [it.param_type if m else None for it, m in zip(items, mv, strict=True)], pa.string()
        ),
        "CONCEPTID": pa.nulls(len(items), pa.int64()),
    }
    labs = catalog.LAB_ITEMS
    d_labitems = {
        "ITEMID": pa.array([it.itemid for it in labs], pa.int64()),
        "LABEL": pa.array([it.label for it in labs], pa.string()),
        "FLUID": pa.array([it.fluid for it in labs], pa.string()),
        "CATEGORY": pa.array([it.category for it in labs], pa.string()),
        "LOINC_CODE": pa.array([it.loinc for it in labs], pa.string()),
    }
    return {"D_ITEMS": d_items, "D_LABITEMS": d_labitems}


#: Stays of no duration (OUTTIME == INTIME, LOS 0) per block of subjects: real MIMIC-III has
#: such stays (issue 28); their share is not measured (REAL-MIMIC.md), so this one is chosen to
#: exercise the cohort rule ``valid_times`` (one stay per 100 subjects, ~0.8 % of stays).
ZERO_LENGTH_STAYS_PER_BLOCK = 1


def zero_length_stays(icustays: dict[str, pa.Array], seed: int, block: int) -> None:
    """Give :data:`ZERO_LENGTH_STAYS_PER_BLOCK` stays of a block's ICUSTAYS OUTTIME = INTIME
    and LOS 0, in place; the stays are drawn from their own stream ``derive_rng(seed,
    "zero-length-stays", block)``, so every other table and column keeps its rows (the stays'
    events and transfers are unchanged, as in the real tables)."""
    n = len(icustays["INTIME"])
    if n == 0:
        return
    rng = derive_rng(seed, "zero-length-stays", block)
    pick = rng.choice(n, size=min(ZERO_LENGTH_STAYS_PER_BLOCK, n), replace=False)
    zero = np.zeros(n, dtype=bool)
    zero[pick] = True
    mask = pa.array(zero)
    icustays["OUTTIME"] = pc.if_else(mask, icustays["INTIME"], icustays["OUTTIME"])
    icustays["LOS"] = pc.if_else(mask, pa.scalar(0.0, pa.float64()), icustays["LOS"])


def _stay_keys(pop: Population, stay: np.ndarray) -> dict[str, pa.Array]:
    """SUBJECT_ID, HADM_ID and ICUSTAY_ID of rows that belong to the ICU stays ``stay``.

    Parameters
    ----------
    pop : Population
        The block's patients.
    stay : ndarray of int
        Per row, the index of its stay in ``pop.i_*``.

    Returns
    -------
    dict of str to pyarrow.Array
        The three key columns, in MIMIC-III's column order.
    """
    adm = pop.i_adm[stay]
    return {
        "SUBJECT_ID": ints(pop.s_id[pop.a_subj[adm]]),
        "HADM_ID": ints(pop.a_id[adm]),
        "ICUSTAY_ID": ints(pop.i_id[stay]),
    }


def _patient_tables(pop: Population) -> dict[str, dict[str, pa.Array]]:
    """PATIENTS, ADMISSIONS and ICUSTAYS of one block of subjects (no random draw)."""
    a_sid = pop.s_id[pop.a_subj]
    cat = pop.a_cat
    out: dict[str, dict[str, pa.Array]] = {}
    out["PATIENTS"] = {
        "SUBJECT_ID": ints(pop.s_id),
        "GENDER": strings(("F", "M"), pop.s_male.astype(np.int64)),
        "DOB": times(pop.s_dob),
        "DOD": times(pop.s_dod),
        "DOD_HOSP": times(pop.s_dod_hosp),
        "DOD_SSN": times(pop.s_dod_ssn),
        "EXPIRE_FLAG": ints(~np.isnan(pop.s_dod)),
    }
    out["ADMISSIONS"] = {
        "SUBJECT_ID": ints(a_sid),
        "HADM_ID": ints(pop.a_id),
        "ADMITTIME": times(pop.a_admit),
        "DISCHTIME": times(pop.a_disch),
        "DEATHTIME": times(pop.a_deathtime),
        "ADMISSION_TYPE": strings(population.ADMISSION_TYPE, cat["admission_type"]),
        "ADMISSION_LOCATION": strings(population.ADMISSION_LOCATION, cat["admission_location"]),
        "DISCHARGE_LOCATION": strings(population.DISCHARGE_LOCATION, cat["discharge_location"]),
        "INSURANCE": strings(population.INSURANCE, cat["insurance"]),
        "LANGUAGE": strings(population.LANGUAGE, cat["language"]),
        "RELIGION": strings(population.RELIGION, cat["religion"]),
        "MARITAL_STATUS": strings(population.MARITAL, cat["marital_status"]),
        "ETHNICITY": strings(population.ETHNICITY, cat["ethnicity"]),
        "EDREGTIME": times(pop.a_edreg),
        "EDOUTTIME": times(pop.a_edout),
        "DIAGNOSIS": strings(population.DIAGNOSIS, cat["diagnosis"]),
        "HOSPITAL_EXPIRE_FLAG": ints(~np.isnan(pop.a_death)),
        "HAS_CHARTEVENTS_DATA": ints(pop.a_has_icu),
    }
    i_mv = pop.a_mv[pop.i_adm]
    out["ICUSTAYS"] = {
        **_stay_keys(pop, np.arange(len(pop.i_id))),
        "DBSOURCE": strings(("carevue", "metavision"), i_mv.astype(np.int64)),
        "FIRST_CAREUNIT": strings(population.CAREUNITS, pop.i_unit_first),
        "LAST_CAREUNIT": strings(population.CAREUNITS, pop.i_unit_last),
        "FIRST_WARDID": ints(pop.i_ward_first),
        "LAST_WARDID": ints(pop.i_ward_last),
        "INTIME": times(pop.i_in),
        "OUTTIME": times(pop.i_out),
        "LOS": floats(np.round((pop.i_out - pop.i_in) / DAY, 4)),
    }
    return out


def _block_tables(pop: Population, rng: np.random.Generator) -> dict[str, dict[str, pa.Array]]:
    """The rows of every patient table for one block of subjects."""
    phys = Physiology(pop, rng)
    na, ni = len(pop.a_id), len(pop.i_id)
    out = _patient_tables(pop)

    ch = ChartBuilder(pop, phys, rng).build()
    n = len(ch["stay"])
    carevue = ch["itemid"] < catalog.CAREVUE_MAX_ITEMID
    out["CHARTEVENTS"] = {
        **_stay_keys(pop, ch["stay"]),
        "ITEMID": ints(ch["itemid"]),
        "CHARTTIME": times(ch["t"]),
        "STORETIME": times(ch["t"] + np.floor(rng.uniform(0, 90, n)) * MINUTE),
        "CGID": ints(rng.integers(14010, 21570, n)),
        "VALUE": ch["value"],
        "VALUENUM": floats(ch["num"]),
        "VALUEUOM": _uom(ch["itemid"]),
        "WARNING": ints(np.zeros(n), ch["error"] < 0),
        "ERROR": ints(np.maximum(ch["error"], 0), ch["error"] < 0),
        "RESULTSTATUS": nulls(n, pa.string()),
        "STOPPED": strings((None, "NotStopd"), carevue.astype(np.int64)),
    }

    lab = lab_events(pop, phys, rng)
    n = len(lab["t"])
    outpatient = lab["adm"] < 0
    out["LABEVENTS"] = {
        "SUBJECT_ID": ints(pop.s_id[lab["subj"]]),
        "HADM_ID": ints(pop.a_id[np.maximum(lab["adm"], 0)] if na else np.zeros(n), outpatient),
        "ITEMID": ints(lab["itemid"]),
        "CHARTTIME": times(lab["t"]),
        "VALUE": num_to_string(lab["num"]),
        "VALUENUM": floats(lab["num"]),
        "VALUEUOM": strings(_LAB_UOMS, np.searchsorted(_LAB_IDS, lab["itemid"])),
        "FLAG": strings((None, "abnormal"), lab_flags(lab["itemid"], lab["num"]).astype(np.int64)),
    }

    uo = output_events(pop, phys, rng)
    n = len(uo["t"])
    out["OUTPUTEVENTS"] = {
        **_stay_keys(pop, uo["stay"]),
        "CHARTTIME": times(uo["t"]),
        "ITEMID": ints(uo["itemid"]),
        "VALUE": floats(uo["num"]),
        "VALUEUOM": _uom(uo["itemid"]),
        "STORETIME": times(uo["t"] + np.floor(rng.uniform(0, 60, n)) * MINUTE),
        "CGID": ints(rng.integers(14010, 21570, n)),
        "STOPPED": nulls(n, pa.string()),
        "NEWBOTTLE": nulls(n, pa.int64()),
        "ISERROR": nulls(n, pa.int64()),
    }
    assert ni == len(out["ICUSTAYS"]["ICUSTAY_ID"])
    return out


def _block(
    seed: int, b: int, first: int, n: int, ids: IdState, other_chart_rows: float, counts: dict
) -> dict[str, dict[str, pa.Array]]:
    """Every table's rows of block ``b`` (subjects ``first`` to ``first + n - 1``), drawn from
    the block's own random streams; adds its admissions and ICU stays to ``counts``."""
    rng = derive_rng(seed, b)
    pop = admission_gaps(make_population(rng, first, n, ids), seed, b)
    counts["admissions"] += len(pop.a_id)
    counts["icustays"] += len(pop.i_id)
    tables = _block_tables(pop, rng)
    zero_length_stays(tables["ICUSTAYS"], seed, b)
    add_other_chart_rows(tables["CHARTEVENTS"], other_chart_rows, seed, b)
    return {
        **tables,
        **diagnoses.block_tables(pop, seed, b),
        **sequence_tables(pop, seed, b),
        "PROCEDURES_ICD": procedures_icd(pop, seed, b),
    }


class _Flusher:
    """Writes the generated blocks' tables: at once with one thread, else in ``threads - 1``
    writer threads, one task per table and chunk, a chunk's tasks starting once the previous
    chunk's have ended (so each table's rows stay in block order)."""

    def __init__(self, writers: dict[str, TableWriter], threads: int) -> None:
        self.writers = writers
        self.pool = ThreadPoolExecutor(max_workers=threads - 1) if threads > 1 else None
        self.writing: list[Future] = []

    def __call__(self, blocks: list[dict[str, dict[str, pa.Array]]]) -> None:
        self.finish()
        names = dict.fromkeys(name for block in blocks for name in block)
        chunks = {name: [b[name] for b in blocks if name in b] for name in names}
        if self.pool is None:
            for name, table_chunks in chunks.items():
                self._write(name, table_chunks)
            return
        self.writing = [self.pool.submit(self._write, name, c) for name, c in chunks.items()]

    def _write(self, name: str, chunks: list[dict[str, pa.Array]]) -> None:
        for cols in chunks:
            self.writers[name].write(cols)

    def finish(self) -> None:
        """Wait for the chunk being written (raising its first error)."""
        writing, self.writing = self.writing, []
        for future in writing:
            future.result()

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)


def generate(
    out_dir: str | os.PathLike,
    subjects: int,
    seed: int,
    chunk_subjects: int = 500,
    other_chart_rows: float = 0.0,
    threads: int = 1,
) -> dict:
    """Write a synthetic MIMIC-III v1.4 CSV.gz copy of ``subjects`` patients to ``out_dir``.

    Subjects are generated in blocks of ``BLOCK_SUBJECTS`` (each with its own random stream
    from ``seed`` and the block number) and appended to the gzip streams every
    ``chunk_subjects`` subjects (rounded up to whole blocks), so memory stays flat as
    ``subjects`` grows and the output depends only on ``subjects``, ``seed`` and
    ``other_chart_rows``. Everything is written to a temporary directory that replaces
    ``out_dir`` at the end.

    ``other_chart_rows`` (default 0) adds, after each CHARTEVENTS row, that many rows on
    average of items outside the benchmark at the same time
    (:func:`mimic_deid.synthetic.quirks.add_other_chart_rows`; the items are then listed in
    D_ITEMS); every other row of every table is the same as without them. 4.2
    (:data:`~mimic_deid.synthetic.quirks.REAL_OTHER_CHART_ROWS`) gives real MIMIC-III's mix,
    ~17 % of CHARTEVENTS rows carrying a benchmark variable's item id, and about 5x the rows.

    ``threads`` above 1 formats and compresses each flushed chunk in ``threads - 1`` writer
    threads, one table per task, while the next chunk is generated (CSV formatting and zlib
    release the GIL; about two thirds of the single-thread time): each table's chunks are
    still written in order, so the files are the same bytes whatever ``threads`` is.

    Returns the summary also written to ``out_dir/SYNTHETIC.json``: ``subjects``,
    ``admissions``, ``icustays`` (counts), ``rows`` (rows per table), ``seed``,
    ``other_chart_rows``. Raises ``ConfigError`` for ``subjects < 1``, a negative seed,
    ``chunk_subjects < 1``, ``other_chart_rows`` outside [0, 50] or an ``out_dir`` that cannot
    be written.
    """
    subjects = _check_int("subjects", subjects, 1)
    seed = _check_int("seed", seed, 0)
    chunk_subjects = _check_int("chunk_subjects", chunk_subjects, 1)
    other_chart_rows = check_other_chart_rows(other_chart_rows)
    threads = _check_int("threads", threads, 1)
    dest = _check_out_dir(out_dir)
    started = time.monotonic()
    ids = IdState.for_subjects(subjects)
    counts = {"admissions": 0, "icustays": 0}
    progress = Progress("synthetic", subjects, log, unit="subjects")
    n_blocks = -(-subjects // BLOCK_SUBJECTS)
    try:
        with atomic_dir(dest) as tmp:
            writers = {name: TableWriter(tmp, name) for name in TABLES}
            flush = _Flusher(writers, threads)
            try:
                dictionaries = _dictionary_tables(other_chart_rows > 0)
                for name, cols in {**dictionaries, **diagnoses.dictionary_tables()}.items():
                    writers[name].write(cols)
                pending: list[dict[str, dict[str, pa.Array]]] = []
                pending_subjects = 0
                for b in range(n_blocks):
                    first = b * BLOCK_SUBJECTS
                    n = min(BLOCK_SUBJECTS, subjects - first)
                    pending.append(_block(seed, b, first, n, ids, other_chart_rows, counts))
                    pending_subjects += n
                    if pending_subjects >= chunk_subjects or b == n_blocks - 1:
                        flush(pending)
                        progress.update(pending_subjects)
                        pending, pending_subjects = [], 0
                flush.finish()
            finally:
                flush.close()
                for w in writers.values():
                    w.close()
            summary = {
                "subjects": subjects,
                "admissions": counts["admissions"],
                "icustays": counts["icustays"],
                "rows": {name: writers[name].rows for name in TABLES},
                "seed": seed,
                "other_chart_rows": other_chart_rows,
            }
            text = json.dumps(summary, indent=2, sort_keys=True) + "\n"
            (tmp / SUMMARY_FILE).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"synthetic generator: cannot write out_dir '{dest}': {exc}") from exc
    progress.close()
    elapsed = time.monotonic() - started
    chart = summary["rows"]["CHARTEVENTS"]
    log.info(
        "synthetic MIMIC-III: %d subjects, %d admissions, %d ICU stays, %d CHARTEVENTS rows "
        "in %.1f s (%.0f chart rows/s)",
        subjects, counts["admissions"], counts["icustays"], chart, elapsed, chart / max(elapsed, 1e-9),
    )  # fmt: skip
    return summary
