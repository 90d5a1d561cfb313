"""The tabular release's claims T1-T4 (mimic_deid.tabular.check): a faithful OLA release is
certified, and each way of breaking one claim is refused with the whole message."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from test_tabular import HIERARCHIES, synthetic_sources

from mimic_deid.core.errors import ReleaseCheckError
from mimic_deid.core.seeding import derive_rng
from mimic_deid.tabular import (
    DEMOGRAPHIC_QIS,
    check_tabular_release,
    demographics,
    load_hierarchies,
    release_table,
)

QIS = [*DEMOGRAPHIC_QIS, "proc_1"]
K, MAX_SUP = 3, 10.0


@pytest.fixture(scope="module")
def made() -> dict:
    p = synthetic_sources()
    table = demographics(p["patients"], p["admissions"], p["procedures"], 1, derive_rng(1, "y"))
    hierarchies = load_hierarchies(HIERARCHIES)
    release, summary = release_table(table, hierarchies, QIS, K, MAX_SUP, "prec")
    return {"table": table, "hierarchies": hierarchies, "release": release, "summary": summary}


def check(made, release=None, summary=None, strict=False):
    return check_tabular_release(
        made["release"] if release is None else release,
        made["summary"] if summary is None else summary,
        made["table"],
        made["hierarchies"],
        QIS,
        k=K,
        max_sup=MAX_SUP,
        strict=strict,
    )


def test_the_ola_release_is_certified_with_its_figures(made):
    result = check(made)
    assert result["passed"] and result["verdict"] == "certified"
    checks = result["checks"]
    assert checks["columns"] == {"columns": QIS}
    assert checks["generalisation"] == {
        "levels": made["summary"]["levels"],
        "rows": made["summary"]["rows_released"],
    }
    assert checks["k_anonymity"]["smallest_class"] == made["summary"]["smallest_class"] >= K
    allowed = math.floor(MAX_SUP / 100 * len(made["table"]))
    assert checks["suppression"] == {
        "k": K,
        "rows_in": len(made["table"]),
        "rows_released": made["summary"]["rows_released"],
        "suppressed": made["summary"]["suppressed"],
        "max_suppressed": allowed,
    }


def test_an_identifier_column_is_refused(made):
    bad = made["release"].assign(subject_id=1)
    result = check(made, release=bad)
    assert not result["passed"] and result["checks"] == {}
    assert result["verdict"] == (
        "refused: identifier or timestamp in the tabular release: tabular/release.subject_id: "
        "identifier column"
    )


def test_a_value_below_its_stated_level_is_refused(made):
    bad = made["release"].copy()
    bad.loc[0, "gender"] = "X"
    result = check(made, release=bad)
    n = len(bad)
    levels = {c.removeprefix("level_"): v for c, v in made["summary"]["levels"].items()}
    assert result["verdict"] == (
        "refused: tabular/release: the rows are not the owner's records generalised at levels "
        f"{levels} with the classes below k = {K} removed ({n} rows released, "
        f"{n} expected, 1 distinct rows differ)"
    )
    assert list(result["checks"]) == ["columns"]


def test_a_class_below_k_is_refused(made):
    # the summary and the rows agree with a release of k = 1, not with the claimed k = 3
    release, summary = release_table(made["table"], made["hierarchies"], QIS, 1, MAX_SUP, "prec")
    summary = {**summary, "k": K}
    with pytest.raises(ReleaseCheckError) as err:
        check(made, release=release, summary=summary, strict=True)
    assert str(err.value).startswith("tabular/release: the rows are not the owner's records")
    smallest = release.groupby(QIS).size()
    assert smallest.min() < K  # the mutant is a real one: classes below k exist


def test_misstated_suppression_is_refused(made):
    summary = {**made["summary"], "suppressed": made["summary"]["suppressed"] + 1}
    result = check(made, summary=summary)
    s = made["summary"]
    assert result["verdict"] == (
        "refused: tabular/release: the summary states {'k': 3, 'rows_in': "
        f"{s['rows_in']}, 'rows_released': {s['rows_released']}, 'suppressed': "
        f"{s['suppressed'] + 1}}}, the data give {{'k': 3, 'rows_in': {s['rows_in']}, "
        f"'rows_released': {s['rows_released']}, 'suppressed': {s['suppressed']}}}"
    )
    assert list(result["checks"]) == ["columns", "generalisation", "k_anonymity"]


def test_k_anonymity_is_counted_on_the_rows_themselves(made):
    from mimic_deid.tabular.check import check_k_anonymous

    rows = pd.DataFrame({"a": ["x", "x", "y"], "b": ["1", "1", "2"]})
    with pytest.raises(ReleaseCheckError) as err:
        check_k_anonymous(rows, ["a", "b"], 2)
    assert str(err.value) == (
        "tabular/release: 1 combination(s) of the quasi-identifiers are shared by fewer than "
        "k = 2 rows (smallest: 1)"
    )
    assert check_k_anonymous(rows.iloc[:2], ["a", "b"], 2) == {
        "k": 2,
        "classes": 1,
        "smallest_class": 2,
    }
