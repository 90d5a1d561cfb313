"""Rule frontier: one row per release of the sweep, from its card (mimic_deid.evaluate.frontier)."""

from mimic_deid.core.atomic import read_json, write_csv
from mimic_deid.core.logs import run_stage
from mimic_deid.evaluate.frontier import frontier_table

with run_stage(snakemake.rule, snakemake.log[0]):
    table = frontier_table(map(read_json, snakemake.input.cards), snakemake.params.cross)
    write_csv(table, snakemake.output.table)
