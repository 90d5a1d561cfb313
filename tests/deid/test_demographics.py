"""Demographics published with the series: the stays' demographics, the cells, the claim, the
attack that knows them (seed 000 §7.2)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from workflow_helpers import ROOT

from mimic_deid.core.errors import ConfigError, InputDataError, ReleaseCheckError
from mimic_deid.deid import (
    check_release,
    demographic_cells,
    encode_demographics,
    mondrian_targets,
)
from mimic_deid.deid.claim_checks import check_demographics
from mimic_deid.deid.classes import ClassArray
from mimic_deid.deid.hierarchy import load_hierarchies
from mimic_deid.deid.mondrian import mondrian_partition
from mimic_deid.evaluate.privacy import evaluate_class
from mimic_deid.pipeline.cohort import stay_demographics

HIERARCHIES = load_hierarchies(ROOT / "config" / "hierarchies.yaml")
BANDS = {"<30", "30-39", "40-49", "50-59", "60-69", "70-79", "80-89", "90+"}


def population(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "icustay_id": np.arange(1000, 1000 + n, dtype=np.int64),
            "age": rng.integers(18, 95, n),
            "gender": rng.choice(["F", "M"], n),
            "admission_type": rng.choice(["EMERGENCY", "ELECTIVE", "URGENT"], n),
            "insurance": rng.choice(["Medicare", "Private", "Medicaid"], n),
            "ethnicity": rng.choice(["WHITE", "BLACK/HAITIAN", "ASIAN - CHINESE", "?"], n),
        }
    )


def test_stay_demographics_floors_ages_and_marks_missing_values() -> None:
    stays = pd.DataFrame(
        {
            "icustay_id": [3, 1],
            "subject_id": [30, 10],
            "hadm_id": [300, 100],
            "age_years": [64.99, 300.2],
        }  # fmt: skip
    )
    admissions = pd.DataFrame(
        {
            "hadm_id": [100, 300],
            "admission_type": ["ELECTIVE", "EMERGENCY"],
            "insurance": ["Private", None],
            "ethnicity": [None, "WHITE"],
        }  # fmt: skip
    )
    patients = pd.DataFrame({"subject_id": [10, 30], "gender": ["F", "M"]})
    out = stay_demographics(stays, admissions, patients)
    assert out.to_dict("list") == {
        "icustay_id": [3, 1],
        "age": [64, 300],  # a shifted age over 89 is kept: the hierarchy puts it in 90+
        "gender": ["M", "F"],
        "admission_type": ["EMERGENCY", "ELECTIVE"],
        "insurance": ["?", "Private"],
        "ethnicity": ["WHITE", "?"],
    }


def test_every_demographic_has_a_hierarchy_and_ages_are_never_published() -> None:
    codes = encode_demographics(population(400), ["age", "gender", "admission_type",
                                                  "insurance", "ethnicity"], HIERARCHIES)  # fmt: skip
    allowed = codes.publishable()
    assert BANDS <= allowed["age"] and not {str(a) for a in range(18, 95)} & allowed["age"]
    assert allowed["gender"] == {"F", "M", "Gender"}
    assert allowed["ethnicity"] == {"White", "Black", "Asian", "Unknown", "Ethnicity"}


def test_unknown_demographic_and_hierarchy_without_a_publishable_level_are_named() -> None:
    with pytest.raises(ConfigError) as err:
        encode_demographics(population(10), ["age", "religion"], HIERARCHIES)
    assert str(err.value) == (
        "release.demographics: unknown demographic(s) ['religion']; expected a subset of "
        "['age', 'gender', 'admission_type', 'insurance', 'ethnicity']"
    )
    flat = {**HIERARCHIES, "age": []}
    with pytest.raises(ConfigError) as err:
        encode_demographics(population(10), ["age"], flat)
    assert str(err.value) == (
        "hierarchy 'age': 0 step(s), but 'age' is published only at level 1 or above; add a "
        "generalisation step"
    )


def test_a_value_outside_its_hierarchy_names_the_row_not_the_value() -> None:
    table = population(5)
    table.loc[3, "admission_type"] = "SECRET-VALUE"
    with pytest.raises(InputDataError) as err:
        encode_demographics(table, ["admission_type"], HIERARCHIES)
    assert "SECRET-VALUE" not in str(err.value)
    assert str(err.value).startswith("demographics table, row 4: column 'admission_type'")


@pytest.mark.parametrize("k", [3, 10, 40])
def test_cells_hold_k_series_and_publish_bands_not_ages(k: int) -> None:
    table = population(300, seed=k)
    codes = encode_demographics(table, ["age", "gender"], HIERARCHIES)
    rows = codes.rows(table["icustay_id"].to_numpy())
    cells, levels = demographic_cells(rows, codes, k)
    sizes = np.bincount(cells)
    assert sizes.min() >= k and sizes.size > 1
    assert (levels[:, 0] >= 1).all()  # age: a band at best
    labels = codes.labels(rows, levels)
    # one label tuple per cell, and two cells never show the same tuple
    per_cell = pd.DataFrame({"cell": cells, **labels}).drop_duplicates()
    assert len(per_cell) == sizes.size
    # cells cover the series' true values: each band contains its series' age
    exact = labels[levels[:, 0] == 1]
    ages = table["age"].to_numpy()[levels[:, 0] == 1]
    lows = exact["age"].str.extract(r"^(\d+)")[0].fillna("0").astype(int).to_numpy()
    assert (ages >= lows).all()


def test_a_cell_splits_only_where_each_half_keeps_ell_outcomes() -> None:
    """Mutant: drop the ℓ condition and some cell holds one outcome."""
    table = population(400, seed=3)
    codes = encode_demographics(table, ["age", "gender"], HIERARCHIES)
    rows = codes.rows(table["icustay_id"].to_numpy())
    outcome = (table["age"].to_numpy() > 85).astype(np.int64)[:, None]  # rare, age-bound
    cells, _ = demographic_cells(rows, codes, 5, outcomes=outcome, ell=2)
    distinct = pd.Series(outcome[:, 0]).groupby(cells).nunique()
    assert (distinct >= 2).all()
    free, _ = demographic_cells(rows, codes, 5)
    assert (pd.Series(outcome[:, 0]).groupby(free).nunique() < 2).any()


def test_mondrian_classes_stay_inside_their_cells() -> None:
    rng = np.random.default_rng(1)
    F = rng.normal(size=(200, 3))
    cells = rng.integers(0, 4, 200)
    labels = mondrian_partition(F, 5, cells=cells)
    assert (pd.Series(cells).groupby(labels).nunique() == 1).all()
    assert np.bincount(labels).min() >= 5


def _release(n: int = 60):
    """A tiny release whose index publishes age bands and gender in cells of >= 5."""
    rng = np.random.default_rng(4)
    table = population(n, seed=4)
    codes = encode_demographics(table, ["age", "gender"], HIERARCHIES)
    X = rng.normal(size=(n, 6, 2))
    cls = ClassArray("all", 6, table["icustay_id"].to_numpy(), X)
    targets, _ = mondrian_targets([cls], ["a", "b"], {"a": ["mean"], "b": ["mean"]}, 5,
                                  "range", demographics=codes)  # fmt: skip
    pseudonyms = [f"P{i:012x}" for i in range(n)]
    index = pd.DataFrame(
        {
            "pseudonym": pseudonyms,
            "duration_class": np.int32(6),
            "age": targets["age"],
            "gender": targets["gender"],
        }  # fmt: skip
    )
    series = pd.DataFrame(
        {
            "pseudonym": np.repeat(pseudonyms, 6),
            "hour": np.tile(np.arange(6, dtype=np.int32), n),
            "a": X[:, :, 0].ravel(),
            "b": X[:, :, 1].ravel(),
        }  # fmt: skip
    )
    eq = pd.DataFrame({"pseudonym": pseudonyms, "class_length": 6, "eq_class": targets["eq_class"]})
    return series, index, eq, codes, table


def test_the_claim_certifies_banded_cells_of_fk() -> None:
    series, index, eq, codes, _ = _release()
    result = check_release(series, index, dk=5, fk=5, eq_classes=eq, n_input=60,
                           n_suppressed=0, demographics=codes.publishable())  # fmt: skip
    assert result["demographics"]["columns"] == ["age", "gender"]
    assert result["demographics"]["smallest"] >= 5


def test_the_claim_refuses_raw_ages() -> None:
    """Mutant: publish raw ages."""
    series, index, eq, codes, table = _release()
    raw = index.assign(age=table["age"].astype(str).to_numpy())
    with pytest.raises(ReleaseCheckError) as err:
        check_release(series, raw, dk=5, fk=5, eq_classes=eq, n_input=60, n_suppressed=0,
                      demographics=codes.publishable())  # fmt: skip
    assert str(err.value) == (
        "demographics: 60 value(s) of index.age are not labels of its hierarchy at a "
        "publishable level (values are never shown)"
    )
    # without the claim's configuration an age column is an identifier (claim 1)
    with pytest.raises(ReleaseCheckError) as err:
        check_release(series, raw, dk=5, fk=5, eq_classes=eq, n_input=60, n_suppressed=0)
    assert str(err.value) == (
        "identifier, timestamp or age in the release: index.age: name contains 'age'"
    )


def test_the_claim_refuses_small_cells_mixed_classes_and_unprotected_columns() -> None:
    series, index, eq, codes, _ = _release()
    allowed = codes.publishable()
    small = index.copy()
    small.loc[0, "gender"] = "F" if small.loc[0, "gender"] != "F" else "M"
    small.loc[0, "age"] = "90+"
    with pytest.raises(ReleaseCheckError) as err:
        check_demographics(small, eq, allowed, 5)
    assert str(err.value).startswith("demographics: 1 (duration class x demographics) cell(s) ")
    mixed = eq.assign(eq_class=0)
    with pytest.raises(ReleaseCheckError) as err:
        check_demographics(index, mixed, allowed, 5)
    assert str(err.value) == (
        "demographics: 1 Mondrian equivalence class(es) span more than one demographic cell"
    )
    with pytest.raises(ReleaseCheckError) as err:
        check_demographics(index, eq, {"age": allowed["age"]}, 5)
    assert str(err.value) == (
        "demographics: the index publishes ['gender'], which the release does not protect "
        "(release.demographics: ['age'])"
    )


def test_the_attacker_who_knows_the_demographics_looks_only_inside_the_cell() -> None:
    """Two identical series in different cells: the features alone tie them (top-1 1/2);
    the demographics tell them apart (top-1 1)."""
    X = np.repeat(np.arange(4.0)[None, :, None], 2, axis=0)
    F = X.mean(axis=1)
    rng = np.random.default_rng(0)
    kwargs = dict(attackers={"strong": (F, F, rng)}, errors=(0.0,))
    _, _, blind = evaluate_class(F, F, X, X, **kwargs)
    _, _, knowing = evaluate_class(F, F, X, X, cells=np.array([0, 1]), **kwargs)
    assert blind["strong"]["release"]["by_error"][0]["top1"] == 0.5
    assert knowing["strong"]["release"]["by_error"][0]["top1"] == 1.0


def test_a_demographic_without_a_hierarchy_stops_the_run_before_any_job(tmp_path) -> None:
    from workflow_helpers import prepare, snakemake

    from mimic_deid.deid.demographics import check_release_config

    flat = tmp_path / "h.yaml"
    flat.write_text("gender:\n  steps:\n    - suppress: Gender\n")
    with pytest.raises(ConfigError) as err:
        check_release_config({"demographics": ["age", "gender"], "hierarchies": str(flat)})
    assert str(err.value) == (
        f"release.demographics: 'age' has no hierarchy in {flat}; the file defines ['gender']"
    )
    config = prepare(tmp_path / "run", {"release": {"hierarchies": str(flat)}})
    proc = snakemake(tmp_path / "run", "-n", config=config, check=False)
    assert proc.returncode == 1
    assert (
        f"mimic-deid: invalid configuration: release.demographics: 'age' has no hierarchy in "
        f"{flat}; the file defines ['gender']"
    ) in proc.stderr.splitlines()
