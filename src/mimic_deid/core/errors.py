"""Exceptions raised for bad input, bad configuration and failed privacy checks.

Every message names the file, table, column or parameter at fault and what was expected, so
that a user can fix the problem without reading a traceback. :class:`ConfigError` and
:class:`InputDataError` are also ``ValueError``s, as a bad argument to any library function
is; the workflow scripts report every :class:`MimicDeidError` as one line
(:func:`mimic_deid.core.logs.run_stage`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


class MimicDeidError(Exception):
    """Base class of every error this package raises on purpose."""


class InputDataError(MimicDeidError, ValueError):
    """A source file, table or column is missing, unreadable or malformed."""


class SourceConnectionError(MimicDeidError):
    """A database could not be reached (the message never contains a password)."""


class ConfigError(MimicDeidError, ValueError):
    """A configuration value has the wrong type, range or is missing."""


class OutputWriteError(MimicDeidError, OSError):
    """An output could not be written (disk full, permission denied, read-only file system).

    Raised by :mod:`mimic_deid.core.atomic` after it removed the partial output: the destination
    still holds its previous version, if any. ``reason`` is the system's reason (e.g. "No
    space left on device").
    """

    reason: str = ""


class ReleaseCheckError(MimicDeidError):
    """A release violates a privacy invariant (class under k, identifier present, lost series)."""


def require_columns(
    df: Any, columns: Iterable[str], what: str, error: type[MimicDeidError] | None = None
) -> None:
    """Raise ``error`` (default :class:`InputDataError`) if ``df`` lacks any of ``columns``.

    The message names ``what`` (a table, file or artefact), the missing columns, the columns
    expected and the columns found.
    """
    columns = list(columns)
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise (error or InputDataError)(
            f"{what}: missing column(s) {missing}; expected at least {columns}, "
            f"got {list(df.columns)}"
        )


def require_int(value: Any, name: str, minimum: int = 1) -> int:
    """``value`` as an int if it is a whole number >= ``minimum``; ``ConfigError`` otherwise.

    The message names the parameter ``name`` (e.g. ``"feature k (fk)"``) and the bound.
    """
    import numbers

    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def require_choice(value: Any, choices: Iterable[Any], name: str) -> Any:
    """``value`` if it is one of ``choices``; ``ConfigError`` otherwise.

    The message names the parameter ``name`` (e.g. ``"series distance
    (evaluate/series_distance)"``), the choices and the value given.
    """
    choices = list(choices)
    if value not in choices:
        raise ConfigError(f"{name} must be one of {choices}, got {value!r}")
    return value
