"""Rule tabular_inverse: Inverse OLA (seed Tables 6.2, 6.3) and m-concealing (Tables 6.4-6.8)."""

import pandas as pd

from mimic_deid import tabular
from mimic_deid.core.atomic import write_csv
from mimic_deid.core.logs import run_stage

p = snakemake.params
with run_stage(snakemake.rule, snakemake.log[0]):
    hierarchies = tabular.load_hierarchies(snakemake.input.hierarchies)
    procs = tabular.procedure_columns(p.procedures)
    views = {"all": [*tabular.DEMOGRAPHIC_QIS, *procs], "reduced": ["yob", "gender", *procs]}
    inv = p.inverse
    grid = tabular.inverse_grid(
        pd.read_parquet(snakemake.input.demographics),
        hierarchies,
        views,
        inv["max_loss"],
        inv["max_sup"],
    )
    write_csv(grid, snakemake.output.inverse)
    tables = {
        n: pd.read_parquet(f)
        for n, f in zip(p.model_procedures, snakemake.input.models, strict=True)
    }
    conc = tabular.concealing_grid(tables, hierarchies, p.models, inv["max_loss"], inv["max_sup"])
    write_csv(conc, snakemake.output.concealing)
