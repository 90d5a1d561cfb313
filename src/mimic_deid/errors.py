"""Exceptions raised for bad input, bad configuration and failed privacy checks.

Every message names the file, table, column or parameter at fault and what was expected, so
that a user can fix the problem without reading a traceback.
"""


class MimicDeidError(Exception):
    """Base class of every error this package raises on purpose."""


class InputDataError(MimicDeidError):
    """A source file, table or column is missing, unreadable or malformed."""


class SourceConnectionError(MimicDeidError):
    """A database could not be reached (the message never contains a password)."""


class ConfigError(MimicDeidError):
    """A configuration value has the wrong type, range or is missing."""


class ReleaseCheckError(MimicDeidError):
    """A release violates a privacy invariant (class under k, identifier present, lost series)."""
