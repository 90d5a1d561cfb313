"""mimic-deid: de-identification of MIMIC-III ICU time series and evaluation of its cost.

The library holds all logic; the Snakemake workflow in the repository root calls it through
thin scripts. No module here reads the Snakemake config: every function takes plain values.
"""

__version__ = "0.1.0"
