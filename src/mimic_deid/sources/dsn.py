"""Parsing a PostgreSQL connection string (libpq DSN) without ever echoing it."""

from __future__ import annotations

import psycopg2.extensions

from mimic_deid.core.errors import ConfigError

__all__ = ["dsn_params"]


def dsn_params(dsn: str) -> dict[str, str]:
    """The parameters of a libpq DSN (``key=value ...`` or a ``postgresql://`` URI).

    The one parser of ``source/postgres/dsn`` (the configuration check and the PostgreSQL
    source both use it). Never echoes the DSN, which may hold a password.

    Returns
    -------
    dict of str to str
        Empty for an empty DSN (libpq then uses the PG* environment).

    Raises
    ------
    ConfigError
        The DSN cannot be parsed.
    """
    if not dsn:
        return {}
    try:
        return psycopg2.extensions.parse_dsn(dsn)
    except psycopg2.ProgrammingError:
        raise ConfigError(
            "config parameter 'source/postgres/dsn': cannot be parsed (expected 'key=value ...' "
            "or a postgresql:// URI); it is not shown because it may contain a password"
        ) from None
