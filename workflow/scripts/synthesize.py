"""Rule synthesize: generate the synthetic MIMIC-III v1.4 CSV.gz copy."""

from mimic_deid.core.logs import run_stage
from mimic_deid.synthetic import generate

with run_stage(snakemake.rule, snakemake.log[0]):
    generate(
        snakemake.output[0],
        subjects=int(snakemake.wildcards.subjects),
        seed=int(snakemake.wildcards.seed),
        other_chart_rows=snakemake.params.other_chart_rows,
        threads=snakemake.threads,
    )
