"""Series step: hourly series of one release with its split."""

from __future__ import annotations

import pandas as pd

from mimic_deid.atomic import write_json, write_parquet
from mimic_deid.errors import InputDataError
from mimic_deid.logs import get_logger
from mimic_deid.series import build_release
from mimic_deid.split import add_splits
from mimic_deid.variables import load_variables

logger = get_logger(__name__)


def series_step(
    raw_dir: str,
    stays_path: str,
    variables_path: str,
    release: str,
    ihm_hours: int,
    split_fractions: dict[str, float],
    seed: int,
    series_out: str,
    meta_out: str,
    cleaning_out: str,
) -> None:
    """Build release ``release`` (``stays`` or ``ihm48``) from the raw events of the cohort."""
    variables = load_variables(variables_path)
    stays = pd.read_parquet(stays_path)
    series, meta, stats = build_release(raw_dir, stays, variables, release, ihm_hours=ihm_hours)
    if meta.empty:
        raise InputDataError(
            f"release '{release}': no cohort stay has a recording of any configured variable"
        )
    meta = add_splits(meta, split_fractions, seed)
    counts = meta["split"].value_counts().to_dict()
    logger.info("release %s: %d series, splits %s", release, len(meta), counts)
    write_parquet(series, series_out)
    write_parquet(meta, meta_out)
    write_json(stats, cleaning_out)
