"""Cohort step."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from mimic_deid.atomic import write_json, write_parquet
from mimic_deid.cohort import build_cohort


def cohort_step(raw_dir: str, stays_out: str, counts_out: str, min_age: float = 18) -> None:
    """Apply the benchmark cohort rules to the raw stays tables."""
    raw = Path(raw_dir)
    stays, counts = build_cohort(
        pd.read_parquet(raw / "icustays.parquet"),
        pd.read_parquet(raw / "admissions.parquet"),
        pd.read_parquet(raw / "patients.parquet"),
        min_age=min_age,
    )
    write_parquet(stays, stays_out)
    write_json({"min_age": min_age, "rules": counts}, counts_out)
