"""MIMIC-III sources (official CSV files, a mimic-code PostgreSQL build) and the extraction of
the raw artefacts from them."""

from mimic_deid.sources.extract import extract_raw
from mimic_deid.sources.factory import SOURCE_KINDS, open_configured_source, open_source

__all__ = ["SOURCE_KINDS", "extract_raw", "open_configured_source", "open_source"]
