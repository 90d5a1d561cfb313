"""Rule tabular_inverse: Inverse OLA (seed Tables 6.2, 6.3) and m-concealing (Tables 6.4-6.8)."""

import pandas as pd

from mimic_deid.core.atomic import write_csv
from mimic_deid.core.logs import run_stage
from mimic_deid.tabular import (
    DEMOGRAPHIC_QIS,
    concealing_grid,
    inverse_grid,
    load_hierarchies,
    procedure_columns,
)

p = snakemake.params
with run_stage(snakemake.rule, snakemake.log[0]):
    hierarchies = load_hierarchies(snakemake.input.hierarchies)
    procs = procedure_columns(p.procedures)
    views = {"all": [*DEMOGRAPHIC_QIS, *procs], "reduced": ["yob", "gender", *procs]}
    inv = p.inverse
    grid = inverse_grid(
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
    conc = concealing_grid(tables, hierarchies, p.models, inv["max_loss"], inv["max_sup"])
    write_csv(conc, snakemake.output.concealing)
