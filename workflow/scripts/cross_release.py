"""Rule cross_release: the nearest-neighbour pairing rate of every pair of releases of one
population (mimic_deid.evaluate.pairing)."""

import pandas as pd

from mimic_deid.core.atomic import read_json, write_csv
from mimic_deid.core.logs import run_stage
from mimic_deid.deid import KEY, dims_of
from mimic_deid.deid.methods import method_of
from mimic_deid.evaluate.pairing import (
    group_intersections,
    pair_generator,
    pairing_rate,
    series_shapes,
    series_statistics,
    shape_pairing_rate,
)

with run_stage(snakemake.rule, snakemake.log[0]):
    loaded = {}

    def release(name):
        if name not in loaded:
            series = pd.read_parquet(snakemake.input[f"series_{name}"])
            keys = pd.read_parquet(snakemake.input[f"pseudonyms_{name}"])
            dims = dims_of(series)
            loaded[name] = (
                series_statistics(series, dims),
                keys.set_index("pseudonym")[KEY],
                (*series_shapes(series, dims), dims),
                pd.read_parquet(snakemake.input[f"index_{name}"]),
            )
        return loaded[name]

    def certified(name):
        return bool(read_json(snakemake.input[f"check_{name}"])["passed"])

    rows = []
    for a, b, k in snakemake.params.pairs:
        (stats_a, keys_a, shapes_a, index_a), (stats_b, keys_b, shapes_b, index_b) = (
            release(a),
            release(b),
        )
        seed = snakemake.params.seed
        # chance among the candidates of each target's published cell (evaluate.pairing)
        cells = {"index_a": index_a, "index_b": index_b}
        result = pairing_rate(stats_a, keys_a, stats_b, keys_b, pair_generator(seed, a, b), **cells)
        low, high = result.pop("rate_ci")
        row = {"release_a": a, "release_b": b, "certified_a": certified(a)}
        row |= {"certified_b": certified(b), **result, "rate_lo": low, "rate_hi": high}
        # the attacker family's shape member on the same targets (docs/threat-model.md)
        shape = shape_pairing_rate(
            shapes_a, keys_a, shapes_b, keys_b, pair_generator(seed, a, b), **cells
        )
        row["shape_rate"] = shape["rate"]
        row["shape_rate_lo"], row["shape_rate_hi"] = shape["rate_ci"]
        stronger = "shape" if shape["rate"] > result["rate"] else "summary"
        row["strongest_attacker"] = stronger
        row["strongest_rate"] = max(shape["rate"], result["rate"])
        groups = [getattr(snakemake.input, f"groups_{name}", None) for name in (a, b)]
        if all(groups):  # two releases with recoverable groups: intersections below k
            tables = [pd.read_parquet(g) for g in groups]
            # a release that publishes no series recovers no group (nothing to intersect)
            recovered = [
                method_of(snakemake.params.methods[name]).groups(t) if len(t) else t[[KEY]]
                for name, t in zip((a, b), tables, strict=True)
            ]
            below = group_intersections(*recovered, k)
            row["groups_below_k_pct_max"] = max(below.values()) if below else float("nan")
            row["groups_below_k_column"] = max(below, key=below.get) if below else ""
        rows.append(row)
    table = pd.DataFrame(rows)
    write_csv(table, snakemake.output.table)
    # public: the pairs of two certified releases (a refused release publishes nothing)
    public = table[table["certified_a"] & table["certified_b"]] if len(table) else table
    write_csv(public, snakemake.output.public)
