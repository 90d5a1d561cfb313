"""The source factory: which reader serves the configured MIMIC-III copy."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mimic_deid.core.errors import ConfigError
from mimic_deid.sources.extract import Reader

__all__ = ["SOURCE_KINDS", "open_configured_source", "open_source"]

#: Config ``source.kind`` values: the synthetic copy is read as CSV files.
SOURCE_KINDS = ("synthetic", "csv", "postgres")


def open_source(kind: str, csv_path: str = "", dsn: str = "", schema: str = "mimiciii") -> Reader:
    """The reader of a MIMIC-III source.

    Parameters
    ----------
    kind : {"synthetic", "csv", "postgres"}
        ``synthetic`` and ``csv`` read the official CSV(.gz) files in ``csv_path``;
        ``postgres`` reads a mimic-code build through libpq ``dsn`` in ``schema``.
    csv_path : str
        Directory of the CSV files.
    dsn : str
        libpq connection string (empty: the ``PG*`` environment variables).
    schema : str
        Database schema holding the MIMIC-III tables.

    Returns
    -------
    CsvSource or PostgresSource
    """
    if kind in ("synthetic", "csv"):
        from mimic_deid.sources.csv_source import CsvSource

        if not csv_path:
            raise ConfigError("config parameter 'source/csv/path': no MIMIC-III directory given")
        return CsvSource(csv_path)
    if kind == "postgres":
        from mimic_deid.sources.postgres_source import PostgresSource

        return PostgresSource(dsn, schema)
    raise ConfigError(f"config parameter 'source/kind': unknown source '{kind}'")


def open_configured_source(source: Mapping[str, Any], csv_path: str = "") -> Reader:
    """The reader of the config's ``source`` section (what the workflow's rules read).

    ``csv_path`` overrides ``source.csv.path`` (the synthetic copy's directory); the DSN is
    taken from the config here so that it never becomes a rule parameter.
    """
    return open_source(
        source["kind"],
        csv_path=csv_path or source["csv"]["path"],
        dsn=source["postgres"]["dsn"],
        schema=source["postgres"]["schema"],
    )
