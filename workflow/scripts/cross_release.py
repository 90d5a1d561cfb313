"""Rule cross_release: the nearest-neighbour pairing rate of every pair of releases of one
population (mimic_deid.evaluate.pairing)."""

import pandas as pd

from mimic_deid.core.atomic import write_csv
from mimic_deid.core.logs import run_stage
from mimic_deid.deid import KEY, dims_of
from mimic_deid.deid.methods import method_of
from mimic_deid.evaluate.pairing import (
    group_intersections,
    pair_generator,
    pairing_rate,
    series_statistics,
)

with run_stage(snakemake.rule, snakemake.log[0]):
    loaded = {}

    def release(name):
        if name not in loaded:
            series = pd.read_parquet(snakemake.input[f"series_{name}"])
            keys = pd.read_parquet(snakemake.input[f"pseudonyms_{name}"])
            loaded[name] = (
                series_statistics(series, dims_of(series)),
                keys.set_index("pseudonym")[KEY],
            )
        return loaded[name]

    rows = []
    for a, b, k in snakemake.params.pairs:
        result = pairing_rate(*release(a), *release(b), pair_generator(snakemake.params.seed, a, b))
        low, high = result.pop("rate_ci")
        row = {"release_a": a, "release_b": b, **result, "rate_lo": low, "rate_hi": high}
        groups = [getattr(snakemake.input, f"groups_{name}", None) for name in (a, b)]
        if all(groups):  # two releases with recoverable groups: intersections below k
            recovered = [
                method_of(snakemake.params.methods[name]).groups(pd.read_parquet(g))
                for name, g in zip((a, b), groups, strict=True)
            ]
            below = group_intersections(*recovered, k)
            row["groups_below_k_pct_max"] = max(below.values()) if below else float("nan")
            row["groups_below_k_column"] = max(below, key=below.get) if below else ""
        rows.append(row)
    write_csv(pd.DataFrame(rows), snakemake.output.table)
