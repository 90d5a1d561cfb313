"""Rule tabular_ola: OLA over k x max_sup x metric (seed Fig. 6.1, Table 6.9) and the release."""

import pandas as pd

from mimic_deid import tabular
from mimic_deid.core.atomic import write_csv, write_json, write_parquet
from mimic_deid.core.logs import run_stage

p = snakemake.params
with run_stage(snakemake.rule, snakemake.log[0]):
    table = pd.read_parquet(snakemake.input.demographics)
    hierarchies = tabular.load_hierarchies(snakemake.input.hierarchies)
    qis = [*tabular.DEMOGRAPHIC_QIS, *tabular.procedure_columns(p.procedures)]
    grid = tabular.ola_grid(table, hierarchies, qis, p.ola["k"], p.ola["max_sup"], p.ola["metrics"])
    write_csv(grid, snakemake.output.grid)
    rel = p.release
    release, summary = tabular.release_table(
        table, hierarchies, qis, rel["k"], rel["max_sup"], rel["metric"]
    )
    write_parquet(release, snakemake.output.release)
    write_json(summary, snakemake.output.summary)
