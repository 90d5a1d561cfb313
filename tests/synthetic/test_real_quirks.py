"""The synthetic copy makes the quirks of real MIMIC-III at the shares measured on real
MIMIC-III v1.4 tables of 100 subjects (docs/real-mimic.md, "Real MIMIC-III quirks and the rules applied"),
each from its own random stream, and the stages read such a copy by their documented rules."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from synthetic_tabular_reference import tabular_sources

from mimic_deid.codes import icd9_hierarchy
from mimic_deid.core.seeding import derive_rng
from mimic_deid.sequences import cpt_events, transfer_events
from mimic_deid.sources.csv_source import CsvSource
from mimic_deid.synthetic import diagnoses
from mimic_deid.synthetic import generate as synth_generate
from mimic_deid.synthetic import generator as synth_generator
from mimic_deid.tabular import demographics

SUBJECTS, SEED = 1500, 5


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("quirks") / "mimic"
    synth_generate(out, subjects=SUBJECTS, seed=SEED)
    return out


def _read(folder: Path, table: str) -> pd.DataFrame:
    return pd.read_csv(folder / f"{table}.csv.gz", dtype={"ICD9_CODE": str, "CPT_CD": str})


def test_admissions_have_empty_demographics_at_the_real_shares(copy):
    adm = _read(copy, "ADMISSIONS")
    empty = adm[["LANGUAGE", "MARITAL_STATUS", "RELIGION"]].isna().mean()
    assert empty["LANGUAGE"] == pytest.approx(0.372, abs=0.03)
    assert empty["MARITAL_STATUS"] == pytest.approx(0.124, abs=0.02)
    assert empty["RELIGION"] == pytest.approx(0.008, abs=0.005)
    assert adm[["ETHNICITY", "INSURANCE"]].notna().all().all()  # never empty in real data
    # the in-memory replay of the tabular stage's tables draws the same values
    mem = tabular_sources(SUBJECTS, SEED)["admissions"]
    for col in ("language", "marital_status", "religion"):
        assert mem[col].isna().tolist() == adm[col.upper()].isna().tolist()


def test_cptevents_have_the_respiratory_cost_centre(copy):
    cpt = _read(copy, "CPTEVENTS")
    resp = cpt["COSTCENTER"] == "Resp"
    assert set(cpt["COSTCENTER"]) == {"ICU", "Resp"}
    assert resp.mean() == pytest.approx(0.184, abs=0.01)
    assert cpt.loc[resp, "TICKET_ID_SEQ"].isna().all()
    assert cpt.loc[resp, "CHARTDATE"].notna().all()
    assert (
        cpt.loc[~resp, "CHARTDATE"].isna().all() and cpt.loc[~resp, "TICKET_ID_SEQ"].notna().all()
    )
    assert cpt["DESCRIPTION"].isna().mean() == pytest.approx(0.816, abs=0.01)  # all ICU rows
    # the sequences stage drops and counts them under the default configuration
    log = cpt_events(CsvSource(copy).read_table("cptevents"))
    assert log.dropped_unticketed == int(resp.sum()) and log.dropped_missing == 0


def test_transfers_have_discharge_and_ward_rows_at_the_real_shares(copy):
    tr = _read(copy, "TRANSFERS")
    kind = tr["EVENTTYPE"]
    adm = tr["HADM_ID"].nunique()
    assert (kind == "admit").sum() == (kind == "discharge").sum() == adm
    dis = tr[kind == "discharge"]
    assert dis["OUTTIME"].isna().all() and dis["CURR_CAREUNIT"].isna().all()
    ward = tr["CURR_CAREUNIT"].isna()
    assert ward[kind == "admit"].mean() == pytest.approx(0.333, abs=0.03)
    assert ward[kind == "transfer"].mean() == pytest.approx(0.695, abs=0.03)
    assert tr["ICUSTAY_ID"].isna().mean() == pytest.approx(0.681, abs=0.03)
    # discharge rows end a sequence and are not states; ward rows are the state WARD
    log = transfer_events(CsvSource(copy).read_table("transfers"))
    assert len(log.obj) + log.dropped_short == len(tr) - len(dis)  # single-row objects
    assert "WARD" in log.states


def test_diagnoses_hold_valid_codes_missing_from_the_dictionary(copy):
    dx = _read(copy, "DIAGNOSES_ICD")
    dictionary = set(_read(copy, "D_ICD_DIAGNOSES")["ICD9_CODE"])
    outside = ~dx["ICD9_CODE"].isin(dictionary)
    assert outside.mean() == pytest.approx(0.026, abs=0.005)
    assert set(dx.loc[outside, "ICD9_CODE"]) <= set(diagnoses.OUTSIDE_DICTIONARY)
    # valid ICD-9-CM: the codes stage builds its hierarchy from the codes present, so they are
    # ordinary leaves (only a code outside ICD-9-CM goes to the root with a warning)
    assert icd9_hierarchy(diagnoses.OUTSIDE_DICTIONARY)[1] == 0


def test_missing_demographics_keep_the_subjects(copy):
    frames = tabular_sources(SUBJECTS, SEED)
    args = (frames["patients"], frames["admissions"], None, 0)
    kept = demographics(*args, derive_rng(1, "yob"))
    dropped = demographics(*args, derive_rng(1, "yob"), missing="drop")
    assert len(kept) == SUBJECTS
    assert (kept["language"] == "?").mean() == pytest.approx(0.372, abs=0.04)
    assert len(dropped) < 0.7 * SUBJECTS  # the seed's rule loses a third of the subjects


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.glob("*.csv.gz")}


def test_each_quirk_changes_only_its_own_table(tmp_path, monkeypatch):
    synth_generate(tmp_path / "with", subjects=150, seed=4)
    monkeypatch.setattr(synth_generator, "admission_gaps", lambda pop, seed, block: pop)
    monkeypatch.setattr(diagnoses, "P_OUTSIDE_DICTIONARY", 0.0)
    synth_generate(tmp_path / "without", subjects=150, seed=4)
    with_, without = _digests(tmp_path / "with"), _digests(tmp_path / "without")
    changed = {name for name in with_ if with_[name] != without[name]}
    assert changed == {"ADMISSIONS.csv.gz", "DIAGNOSES_ICD.csv.gz"}
    dx = pd.read_csv(tmp_path / "without" / "DIAGNOSES_ICD.csv.gz", dtype={"ICD9_CODE": str})
    assert not np.isin(dx["ICD9_CODE"], diagnoses.OUTSIDE_DICTIONARY).any()


def test_report_says_why_the_concealing_table_is_empty_without_procedures():
    from mimic_deid.report.tabular import concealing_table

    empty = pd.DataFrame(
        columns=["model", "procedures", "rows", "max_loss", "max_sup", "k", "inverse_m"]
    )
    assert concealing_table({"concealing": empty})["note"].tolist() == [
        "no m-concealing model: tabular.procedures is 0 (PROCEDURES_ICD not read)"
    ]
