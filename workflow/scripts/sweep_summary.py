"""Rule sweep_summary: one row per sweep point (CSV and Markdown)."""

import pandas as pd

from mimic_deid.core.atomic import read_json, write_csv, write_text
from mimic_deid.core.logs import run_stage
from mimic_deid.report import sweep_table, to_markdown

points = list(snakemake.params.points)
dks = list(dict.fromkeys(p["dk"] for p in points))
with run_stage(snakemake.rule, snakemake.log[0]):
    table = sweep_table(
        points,
        duration=dict(zip(dks, map(read_json, snakemake.input.duration), strict=True)),
        baseline=dict(zip(dks, map(pd.read_parquet, snakemake.input.baseline), strict=True)),
        method_summary=[read_json(p) for p in snakemake.input.method_summary],
        disagreement=[pd.read_parquet(p) for p in snakemake.input.disagreement],
        linkage=[read_json(p) for p in snakemake.input.linkage],
        utility=[pd.read_csv(p) for p in snakemake.input.utility],
        utility_cross=snakemake.params.utility_cross,
        pairing=pd.read_csv(snakemake.input.cross_release),
        # the final verdict of each release: its card's (the check's, unless a pairing
        # refuses the release; evaluate.card)
        checks=[
            {"stays": read_json(stays), "ihm48": read_json(ihm48)}
            for stays, ihm48 in zip(
                snakemake.input.card_stays, snakemake.input.card_ihm48, strict=True
            )
        ],
        # public: no cell computed from a refused release's values
        withhold_refused=True,
    )
    write_csv(table, snakemake.output.csv)
    write_text(to_markdown(table.round(4)), snakemake.output.md)
