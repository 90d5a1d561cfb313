"""Rule tabular_dps: DPS parameters (seed §6.2.1) and epsilon-safe LA (§6.2.2, §6.2.3)."""

import pandas as pd

from mimic_deid.core.atomic import write_csv, write_json
from mimic_deid.core.logs import run_stage
from mimic_deid.tabular import dps_summary, epsilon_la_grid, load_hierarchies

p = snakemake.params
e = p.epsilon
with run_stage(snakemake.rule, snakemake.log[0]):
    table = pd.read_parquet(snakemake.input.demographics)
    grid, summary = dps_summary(e["beta"], e["epsilon"], e["k"], len(table), e["delta_max"])
    write_csv(grid, snakemake.output.grid)
    write_json(summary, snakemake.output.summary)
    la = epsilon_la_grid(
        table,
        load_hierarchies(snakemake.input.hierarchies),
        e["la_columns"],
        e["la_k"],
        e["la_beta"],
        e["la_max_sup"],
        e["la_penalty"],
        e["la_epsilon_prime"],
        e["la_samples"],
        p.seed,
    )
    write_csv(la, snakemake.output.la)
