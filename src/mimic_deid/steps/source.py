"""Source steps: synthetic generation and raw extraction."""

from __future__ import annotations

from mimic_deid.errors import ConfigError
from mimic_deid.logs import get_logger
from mimic_deid.variables import load_variables

logger = get_logger(__name__)


def synthesize_step(out_dir: str, subjects: int, seed: int) -> dict:
    """Write a synthetic MIMIC-III v1.4 CSV.gz copy of ``subjects`` patients to ``out_dir``."""
    from mimic_deid.synthetic import generate

    summary = generate(out_dir, subjects=subjects, seed=seed)
    logger.info("synthetic MIMIC-III written: %s", summary)
    return summary


def open_source(kind: str, csv_path: str = "", dsn: str = "", schema: str = "mimiciii"):
    """Return the reader of the configured source kind (``synthetic`` reads its CSV copy)."""
    if kind in ("synthetic", "csv"):
        from mimic_deid.sources.csv_source import CsvSource

        if not csv_path:
            raise ConfigError("config parameter 'source/csv/path': no MIMIC-III directory given")
        return CsvSource(csv_path)
    if kind == "postgres":
        from mimic_deid.sources.postgres_source import PostgresSource

        return PostgresSource(dsn, schema)
    raise ConfigError(f"config parameter 'source/kind': unknown source '{kind}'")


def extract_step(
    out_dir: str,
    kind: str,
    csv_path: str,
    dsn: str,
    schema: str,
    variables_path: str,
    event_buckets: int,
    chunk_rows: int,
) -> dict:
    """Extract the raw artefacts (stays tables and configured events) into ``out_dir``."""
    from mimic_deid.sources.extract import extract_raw

    variables = load_variables(variables_path)
    itemids = {i for v in variables for i in v.all_itemids}
    reader = open_source(kind, csv_path=csv_path, dsn=dsn, schema=schema)
    logger.info(
        "extracting %d itemids of %d variables from %s source", len(itemids), len(variables), kind
    )
    return extract_raw(
        reader, out_dir, itemids=itemids, event_buckets=event_buckets, chunk_rows=chunk_rows
    )
