"""Rule cross_release: every pair's pairing rows (rule pair_releases) with whether each release
is certified (mimic_deid.evaluate.pairing.pair_table), and the public table of the pairs of
two certified releases."""

import pandas as pd

from mimic_deid.core.atomic import read_json, write_csv
from mimic_deid.core.logs import run_stage
from mimic_deid.evaluate.pairing import pair_table

with run_stage(snakemake.rule, snakemake.log[0]):
    checks = {
        name.removeprefix("check_"): bool(read_json(path)["passed"])
        for name, path in snakemake.input.items()
        if name.startswith("check_")
    }
    table = pair_table(pd.read_parquet(snakemake.input.rows), checks)
    write_csv(table, snakemake.output.table)
    # public: the pairs of two certified releases (a refused release publishes nothing)
    public = table[table["certified_a"] & table["certified_b"]] if len(table) else table
    write_csv(public, snakemake.output.public)
