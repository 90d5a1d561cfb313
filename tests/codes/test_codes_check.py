"""The claims of the codes stage's public outputs (mimic_deid.codes.check, C1-C3): certified
as the stage writes them, refused when one of them is broken, with the whole verdict."""

from __future__ import annotations

import pandas as pd
import pytest

from mimic_deid.codes import ALIGNMENTS, check_codes_outputs
from mimic_deid.core.errors import ReleaseCheckError

SECTION = {
    "gccens": {"k": [2, 5], "cap": 3, "caps": [2, "max"], "k_caps": 5},
    "lda": {"k": [2, 4]},
}
AUDIT = {"unit": "subject", "k": 3, "codes": {"records": 120, "unique_percent": 12.5}}


def outputs() -> dict:
    """Tables shaped as codes_gccens and codes_lda write them for SECTION (read back by CSV)."""
    gccens = pd.DataFrame(
        {
            "table": ["k", "k", "cap", "cap"],
            "k": [2, 5, 5, 5],
            "cap": ["3", "3", "2", "max"],
            "mean": [0.1, 0.2, 0.3, 0.1],
            "censored_percent": [1.0, 2.0, 3.0, 1.0],
        }
    )
    lda = pd.DataFrame(
        {
            "alignment": [a for a in ALIGNMENTS for _ in (2, 4)],
            "k": [2, 4] * len(ALIGNMENTS),
            "lm": [0.2, 0.4, 0.25, 0.45],
            "smallest_group": [2, 5, 3, 4],
        }
    )
    return {"gccens": gccens, "lda": lda, "lda_info": {"trajectories": 50}}


def check(strict: bool = False, **changed) -> dict:
    parts = {**outputs(), **changed}
    return check_codes_outputs(
        AUDIT, parts["gccens"], parts["lda"], parts["lda_info"], SECTION, ALIGNMENTS, strict=strict
    )


def test_the_stage_outputs_are_certified_with_their_figures():
    result = check()
    assert result == {
        "passed": True,
        "verdict": "certified",
        "outputs": "results/codes",
        "checks": {
            "columns": {
                "tables": ["gccens_cul.csv", "lda.csv"],
                "documents": ["audit.json", "lda.json"],
            },
            "aggregates": {"gccens_rows": 4, "lda_rows": 4},
            "lda_k_anonymity": {"min_margin": 0},
        },
    }


def test_an_identifier_column_or_key_is_refused():
    lda = outputs()["lda"].assign(subject_id=7)
    assert check(lda=lda)["verdict"] == (
        "refused: claim C1 (columns): lda.csv.subject_id: identifier column"
    )
    info = {"trajectories": 50, "examples": [{"hadm_id": 1}]}
    assert check(lda_info=info)["verdict"] == (
        "refused: claim C1 (columns): lda.json.examples.hadm_id: identifier key"
    )


def test_a_row_per_record_is_refused():
    """A table with more rows than settings could be per record: refused, naming the grid."""
    gccens = outputs()["gccens"]
    extra = pd.concat([gccens, gccens.iloc[[0]]], ignore_index=True)
    assert check(gccens=extra)["verdict"] == (
        "refused: claim C2 (aggregates only): gccens_cul.csv holds 5 row(s) of (table, k, cap), "
        "expected one per configured setting: 4 (cap/5/2, cap/5/max, k/2/3, k/5/3)"
    )


def test_an_lda_group_below_k_is_refused():
    lda = outputs()["lda"]
    lda.loc[3, "smallest_group"] = 3
    result = check(lda=lda)
    assert not result["passed"]
    assert result["verdict"] == (
        "refused: claim C3 (k-anonymous LDA): a published trajectory is shared by fewer than k "
        "records (ags k=4: 3)"
    )
    with pytest.raises(ReleaseCheckError, match="claim C3"):
        check(strict=True, lda=lda)


def test_empty_tables_pass_only_when_the_codes_are_absent():
    empty_lda = outputs()["lda"].iloc[:0]
    absent = {"absent_codes": ["250"], "note": "none of the codes occurs in the cohort"}
    assert check(lda=empty_lda, lda_info=absent)["passed"]
    assert check(lda=empty_lda)["verdict"].startswith(
        "refused: claim C2 (aggregates only): lda.csv holds 0 row(s) of (alignment, k)"
    )
