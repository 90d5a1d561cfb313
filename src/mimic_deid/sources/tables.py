"""The MIMIC-III v1.4 tables the extraction reads: their columns, Arrow types and output order.

Column names are lower case here; sources map file headers / database columns onto these names
case-insensitively. A spec lists only the columns the project uses: the others are split off by
the parser and never decoded, so a stray byte in e.g. ICUSTAYS.DBSOURCE or a D_ICD_DIAGNOSES
title cannot stop a run (a bad byte in a column listed here is an error naming its row). Every source (CSV, PostgreSQL) parses into exactly these Arrow types, so the
raw artefacts are identical whatever the source.

Small tables (PATIENTS, ADMISSIONS, ICUSTAYS) are read whole; event tables (CHARTEVENTS,
LABEVENTS) are streamed. Event batches from a source carry :data:`SOURCE_EVENT_SCHEMA`
(``error`` is null where the table has no ERROR column); the extraction writes
:data:`EVENT_SCHEMA`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pyarrow as pa

from mimic_deid.core.errors import ConfigError

TIMESTAMP = pa.timestamp("s")


@dataclass(frozen=True)
class Column:
    """One column read from a MIMIC-III table.

    ``required=False`` means a file/table without it is accepted and the column is filled with
    nulls (e.g. LABEVENTS has no ICUSTAY_ID and no ERROR).
    """

    name: str
    type: pa.DataType
    required: bool = True


@dataclass(frozen=True)
class TableSpec:
    """A MIMIC-III table: its lower-case name, file stem and the columns read from it.

    ``unique`` and ``not_null`` are the key columns MIMIC-III v1.4 guarantees (checked where
    the table enters, ``extract.check_keys``).
    """

    name: str
    columns: tuple[Column, ...]
    sort_by: tuple[str, ...] = ()
    unique: tuple[str, ...] = ()
    not_null: tuple[str, ...] = ()

    @property
    def file_stem(self) -> str:
        """The official file name without extension, e.g. ``CHARTEVENTS``."""
        return self.name.upper()

    @property
    def schema(self) -> pa.Schema:
        """Arrow schema of the columns read, in spec order."""
        return pa.schema([pa.field(c.name, c.type) for c in self.columns])

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def timestamp_columns(self) -> list[str]:
        return [c.name for c in self.columns if pa.types.is_timestamp(c.type)]


def _cols(*spec: tuple) -> tuple[Column, ...]:
    return tuple(Column(*s) for s in spec)


PATIENTS = TableSpec(
    "patients",
    _cols(
        ("subject_id", pa.int64()),
        ("gender", pa.string()),
        ("dob", TIMESTAMP),
        ("dod", TIMESTAMP),
    ),
    sort_by=("subject_id",),
    unique=("subject_id",),
    not_null=("subject_id",),
)

ADMISSIONS = TableSpec(
    "admissions",
    _cols(
        ("subject_id", pa.int64()),
        ("hadm_id", pa.int64()),
        ("admittime", TIMESTAMP),
        ("dischtime", TIMESTAMP),
        ("deathtime", TIMESTAMP),
        ("hospital_expire_flag", pa.int64()),
        # the demographics a series release may publish (mimic_deid.deid.demographics)
        ("admission_type", pa.string()),
        ("insurance", pa.string()),
        ("ethnicity", pa.string()),
    ),
    sort_by=("hadm_id", "subject_id"),
    unique=("hadm_id",),
    not_null=("subject_id", "hadm_id"),
)

ICUSTAYS = TableSpec(
    "icustays",
    _cols(
        ("subject_id", pa.int64()),
        ("hadm_id", pa.int64()),
        ("icustay_id", pa.int64()),
        ("first_careunit", pa.string()),
        ("last_careunit", pa.string()),
        ("first_wardid", pa.int64()),
        ("last_wardid", pa.int64()),
        ("intime", TIMESTAMP),
        ("outtime", TIMESTAMP),
    ),
    sort_by=("icustay_id", "hadm_id", "subject_id"),
    unique=("icustay_id",),
    not_null=("subject_id", "hadm_id", "icustay_id"),
)

CHARTEVENTS = TableSpec(
    "chartevents",
    _cols(
        ("subject_id", pa.int64()),
        ("hadm_id", pa.int64()),
        ("icustay_id", pa.int64()),
        ("itemid", pa.int64()),
        ("charttime", TIMESTAMP),
        ("value", pa.string()),
        ("valuenum", pa.float64()),
        ("valueuom", pa.string()),
        ("error", pa.int64()),
    ),
)

LABEVENTS = TableSpec(
    "labevents",
    _cols(
        ("subject_id", pa.int64()),
        ("hadm_id", pa.int64()),
        ("icustay_id", pa.int64(), False),  # absent in v1.4: always null
        ("itemid", pa.int64()),
        ("charttime", TIMESTAMP),
        ("value", pa.string()),
        ("valuenum", pa.float64()),
        ("valueuom", pa.string()),
        ("error", pa.int64(), False),  # absent in v1.4: always null
    ),
)

DIAGNOSES_ICD = TableSpec(
    "diagnoses_icd",
    _cols(
        ("subject_id", pa.int64()),
        ("hadm_id", pa.int64()),
        ("seq_num", pa.int64()),
        ("icd9_code", pa.string()),
    ),
    sort_by=("hadm_id", "seq_num", "icd9_code", "subject_id"),
    not_null=("subject_id", "hadm_id"),
)

D_ICD_DIAGNOSES = TableSpec(
    "d_icd_diagnoses",
    _cols(
        ("icd9_code", pa.string()),
    ),
    sort_by=("icd9_code",),
    unique=("icd9_code",),
    not_null=("icd9_code",),
)

TRANSFERS = TableSpec(
    "transfers",
    _cols(
        ("subject_id", pa.int64()),
        ("hadm_id", pa.int64()),
        ("icustay_id", pa.int64()),
        ("eventtype", pa.string()),
        ("curr_careunit", pa.string()),
        ("curr_wardid", pa.int64()),
        ("intime", TIMESTAMP),
        ("outtime", TIMESTAMP),
    ),
    sort_by=("subject_id", "intime", "hadm_id"),
)

CPTEVENTS = TableSpec(
    "cptevents",
    _cols(
        ("subject_id", pa.int64()),
        ("hadm_id", pa.int64()),
        ("costcenter", pa.string()),
        ("chartdate", TIMESTAMP),
        ("cpt_cd", pa.string()),
        ("ticket_id_seq", pa.int64()),
    ),
    sort_by=("subject_id", "hadm_id", "ticket_id_seq"),
)

#: Tables of the ``sequences`` stage (seed 004), read whole but not by the raw extraction.
SEQUENCE_TABLES: dict[str, TableSpec] = {t.name: t for t in (TRANSFERS, CPTEVENTS)}
#: Diagnosis tables read whole by the ``codes`` stage (not by the raw extraction).
CODE_TABLES: dict[str, TableSpec] = {t.name: t for t in (DIAGNOSES_ICD, D_ICD_DIAGNOSES)}
SMALL_TABLES: dict[str, TableSpec] = {
    t.name: t
    for t in (PATIENTS, ADMISSIONS, ICUSTAYS, *CODE_TABLES.values(), *SEQUENCE_TABLES.values())
}
EVENT_TABLES: dict[str, TableSpec] = {t.name: t for t in (CHARTEVENTS, LABEVENTS)}
ALL_TABLES: dict[str, TableSpec] = {**SMALL_TABLES, **EVENT_TABLES}

#: Columns of every event batch a source yields (both event tables normalised to this).
SOURCE_EVENT_SCHEMA: pa.Schema = CHARTEVENTS.schema

#: Columns of ``events/part-NNN.parquet``.
EVENT_SCHEMA: pa.Schema = pa.schema(
    [
        pa.field("table", pa.string()),
        pa.field("subject_id", pa.int64()),
        pa.field("hadm_id", pa.int64()),
        pa.field("icustay_id", pa.int64()),
        pa.field("itemid", pa.int64()),
        pa.field("charttime", TIMESTAMP),
        pa.field("value", pa.string()),
        pa.field("valuenum", pa.float64()),
        pa.field("valueuom", pa.string()),
    ]
)

#: Sort key of every events part (documented in docs/architecture.md); ``subject_id`` is a
#: final tie-breaker so that the order is total.
EVENT_SORT_KEYS: tuple[str, ...] = (
    "hadm_id",
    "charttime",
    "itemid",
    "table",
    "icustay_id",
    "value",
    "valuenum",
    "valueuom",
    "subject_id",
)


def get_spec(name: str) -> TableSpec:
    """Return the spec of table ``name`` (any case), or raise ``ConfigError``."""
    key = str(name).strip().lower()
    if key not in ALL_TABLES:
        raise ConfigError(
            f"unknown MIMIC-III table {name!r}; expected one of {sorted(t.upper() for t in ALL_TABLES)}"
        )
    return ALL_TABLES[key]


def get_event_spec(name: str) -> TableSpec:
    """Return the spec of event table ``name`` (CHARTEVENTS or LABEVENTS), or raise."""
    spec = get_spec(name)
    if spec.name not in EVENT_TABLES:
        raise ConfigError(f"{name!r} is not an event table; expected CHARTEVENTS or LABEVENTS")
    return spec


def get_small_spec(name: str) -> TableSpec:
    """Return the spec of a table read whole (:data:`SMALL_TABLES`), or raise.

    The tabular stage's readers (:data:`TABULAR_TABLES`) are read whole too.
    """
    if str(name).strip().lower() in TABULAR_TABLES:
        return TABULAR_TABLES[str(name).strip().lower()]
    spec = get_spec(name)
    if spec.name not in SMALL_TABLES:
        raise ConfigError(
            f"{name!r} is not a small table; expected one of "
            f"{', '.join(t.upper() for t in SMALL_TABLES)}"
        )
    return spec


# --------------------------------------------------------------------------- tabular stage
# Read by the ``tabular`` stage only (not by ``extract_raw``), whole, through ``read_table``.

#: ADMISSIONS with the demographic quasi-identifiers of seed 003 §3.1 (its keys and
#: ADMITTIME, then the four columns).
ADMISSIONS_DEMOGRAPHICS = replace(
    ADMISSIONS,
    columns=ADMISSIONS.columns[:3]
    + _cols(
        ("insurance", pa.string()),
        ("language", pa.string()),
        ("religion", pa.string()),
        ("marital_status", pa.string()),
    ),
)

#: PROCEDURES_ICD: the layout of DIAGNOSES_ICD (ICD-9 procedure codes by ``seq_num``).
PROCEDURES_ICD = replace(DIAGNOSES_ICD, name="procedures_icd")

#: What ``read_table`` accepts besides :data:`SMALL_TABLES`, by reader name.
TABULAR_TABLES: dict[str, TableSpec] = {
    "admissions_demographics": ADMISSIONS_DEMOGRAPHICS,
    "procedures_icd": PROCEDURES_ICD,
}
