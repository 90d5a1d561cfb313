"""End-to-end: real `snakemake tabular` on a tiny synthetic MIMIC-III in a temporary directory."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from workflow_helpers import prepare, snakemake

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

TABULAR = {
    "source": {"synthetic": {"subjects": 300, "seed": 7}},
    "tabular": {
        "procedures": 1,
        "draws": 3,
        "ola": {"k": [2, 5], "max_sup": [0, 10], "metrics": ["prec", "dm_star"]},
        "inverse": {"max_loss": [0.5, 0.8], "max_sup": [0, 50]},
        "concealing": {"models": {"A": [0.01], "B": [0.05, 0.01]}},
        "epsilon": {
            "beta": [0.1, 0.5],
            "epsilon": [1.0, 2.0],
            "k": [5, 50],
            "la_k": 3,
            "la_columns": ["yob", "gender", "insurance"],
            "la_samples": 2,
            "la_penalty": [0.0, 0.1],
            "la_epsilon_prime": [0.5, 1.0],
        },
        "release": {"k": 3, "max_sup": 10},
    },
}
PUBLIC = [
    "uniqueness.json", "ola_grid.csv", "inverse_ola.csv", "concealing.csv", "dps_grid.csv",
    "dps.json", "epsilon_la.csv", "release.json", "check.json",
]  # fmt: skip


@pytest.fixture(scope="module")
def tabular_run(tmp_path_factory) -> tuple[Path, Path]:
    workdir = tmp_path_factory.mktemp("tabular")
    config = prepare(workdir, TABULAR)
    snakemake(workdir, "--cores", "2", "tabular", config=config)
    return workdir, config


def test_tabular_target_writes_every_output(tabular_run):
    workdir, _ = tabular_run
    out = workdir / "results" / "tabular"
    assert sorted(p.name for p in out.iterdir()) == sorted(PUBLIC)
    grid = pd.read_csv(out / "ola_grid.csv")
    assert len(grid) == 8 and (grid["checked"] >= 1).all()
    assert (grid["suppressed_percent"] <= grid["max_sup"] + 1e-9).all()
    inverse = pd.read_csv(out / "inverse_ola.csv")
    assert set(inverse["view"]) == {"all", "reduced"} and len(inverse) == 8
    concealing = pd.read_csv(out / "concealing.csv")
    assert set(concealing["procedures"]) == {1, 2}
    summary = json.loads((out / "release.json").read_text())
    assert summary["k"] == 3 and summary["smallest_class"] >= 3
    release = pd.read_parquet(workdir / "results/private/tabular/release.parquet")
    assert len(release) == summary["rows_released"]
    # the release's claims, re-checked from the demographics table
    check = json.loads((out / "check.json").read_text())
    assert check["passed"] and check["verdict"] == "certified"
    assert check["table"] == "tabular/release"
    assert list(check["checks"]) == ["columns", "generalisation", "k_anonymity", "suppression"]
    assert check["checks"]["k_anonymity"]["smallest_class"] == summary["smallest_class"]
    assert check["checks"]["suppression"]["suppressed"] == summary["suppressed"]
    assert check["checks"]["generalisation"]["levels"] == summary["levels"]
    assert json.loads((out / "dps.json").read_text())["smallest_k_candidates"] == 50
    uniq = json.loads((out / "uniqueness.json").read_text())
    assert uniq["demographics"]["draws"] == 3 and "first_three" in uniq["procedures"]


def test_public_tabular_outputs_hold_no_identifiers_or_rows(tabular_run):
    workdir, _ = tabular_run
    forbidden = {"subject_id", "hadm_id", "icustay_id", "yob", "admittime", "dob", "icd9_code"}
    for path in (workdir / "results" / "tabular").iterdir():
        if path.suffix == ".csv":
            assert not forbidden & set(pd.read_csv(path).columns), path
        else:
            data = json.loads(path.read_text())
            if path.name == "check.json":  # T1 names the released columns: the QIs
                assert data["checks"]["columns"]["columns"][0] == "yob"
                data["checks"]["columns"]["columns"] = []
            text = json.dumps(data)
            assert not any(f'"{word}"' in text for word in forbidden), path
    demo = pd.read_parquet(workdir / "results/private/tabular/demographics_p1.parquet")
    assert {"subject_id", "hadm_id", "yob", "proc_1"} <= set(demo.columns)


def test_tabular_rerun_is_a_no_op_and_k_above_rows_is_one_line(tabular_run):
    workdir, config = tabular_run
    dry = snakemake(workdir, "-n", "tabular", config=config)
    assert "Nothing to be done" in dry.stdout + dry.stderr
    before = {p.name: p.read_bytes() for p in (workdir / "results" / "tabular").iterdir()}
    snakemake(
        workdir, "--cores", "2", "tabular", "--forcerun", "tabular_demographics", config=config
    )
    after = {p.name: p.read_bytes() for p in (workdir / "results" / "tabular").iterdir()}
    assert after == before  # same config and seed: byte-identical outputs
    rows = len(pd.read_parquet(workdir / "results/private/tabular/demographics_p1.parquet"))
    # a grid k above the rows is a point without figures, with the reason (issue 48)
    snakemake(
        workdir, "--cores", "1", "tabular", "--config", "tabular={'ola': {'k': [2, 100000]}}",
        config=config,
    )  # fmt: skip
    grid = pd.read_csv(workdir / "results/tabular/ola_grid.csv", keep_default_na=False)
    assert set(grid.loc[grid["k"] == 100000, "not_computable"]) == {
        f"not computable: k = 100000 exceeds the {rows} rows of the demographics table "
        f"(config parameter 'tabular/ola/k'; the largest k that fits: {rows})"
    }
    assert set(grid.loc[grid["k"] == 2, "not_computable"]) == {""}
    # the release's own k above the rows stops, in one line naming it and the fix
    bad = snakemake(
        workdir, "--cores", "1", "tabular", "--config", "tabular={'release': {'k': 100000}}",
        config=config, check=False,
    )  # fmt: skip
    assert bad.returncode != 0
    assert (
        "mimic-deid error in rule 'tabular_ola': config parameter 'tabular/release/k': k = "
        f"100000 must lie in [1, {rows}] (the rows of the demographics table); lower it, or "
        "for a cohort of about 100 subjects run with --configfile config/presets/demo.yaml "
        "(docs/cohort-sizes.md)"
    ) in bad.stderr
    assert "Traceback" not in bad.stderr


def test_demographics_only_stage_reads_no_procedures_icd(tmp_path):
    """`tabular.procedures: 0` runs on a CSV copy without PROCEDURES_ICD (it is not read)."""
    from mimic_deid.synthetic import generate

    source = tmp_path / "mimic"
    generate(source, subjects=200, seed=3)
    (source / "PROCEDURES_ICD.csv.gz").unlink()
    overrides = {
        **TABULAR,
        "source": {"kind": "csv", "csv": {"path": str(source)}},
        "tabular": {**TABULAR["tabular"], "procedures": 0},
    }
    workdir = tmp_path / "run"
    config = prepare(workdir, overrides)
    snakemake(workdir, "--cores", "2", "tabular", config=config)
    out = workdir / "results" / "tabular"
    assert sorted(p.name for p in out.iterdir()) == sorted(PUBLIC)
    uniq = json.loads((out / "uniqueness.json").read_text())
    assert uniq["procedures"] == {} and uniq["demographics"]["rows"] == 200  # none dropped
    concealing = pd.read_csv(out / "concealing.csv")
    assert concealing.empty and "inverse_m" in concealing.columns
