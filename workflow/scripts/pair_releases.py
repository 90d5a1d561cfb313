"""Rule pair_releases: the nearest-neighbour pairing rate of every pair of releases of one
population (mimic_deid.evaluate.pairing), from the staged releases; the pairs run over the
job's threads. Rule cross_release adds the checks' verdicts."""

from functools import cache, partial

import pandas as pd

from mimic_deid.core.atomic import write_parquet
from mimic_deid.core.logs import run_stage
from mimic_deid.core.threads import limit_threads, map_tasks
from mimic_deid.deid import KEY, dims_of
from mimic_deid.deid.methods import method_of
from mimic_deid.evaluate.pairing import pair_row, series_shapes, series_statistics

# The job's threads are threads of this process (map_tasks, shared: the pairs share the loaded
# releases, which would be pickled to a worker process per pair), each with one native thread.
with run_stage(snakemake.rule, snakemake.log[0]), limit_threads(1):

    @cache
    def release(name):
        """What the pairing compares of release ``name``, read once per release."""
        series = pd.read_parquet(snakemake.input[f"series_{name}"])
        keys = pd.read_parquet(snakemake.input[f"pseudonyms_{name}"])
        dims = dims_of(series)
        return (
            series_statistics(series, dims),
            keys.set_index("pseudonym")[KEY],
            (*series_shapes(series, dims), dims),
            pd.read_parquet(snakemake.input[f"index_{name}"]),
        )

    @cache
    def recovered(name):
        """The groups a recipient recovers from release ``name``, read once per release."""
        table = pd.read_parquet(snakemake.input[f"groups_{name}"])
        # a release that publishes no series recovers no group (nothing to intersect)
        return (
            method_of(snakemake.params.methods[name]).groups(table) if len(table) else table[[KEY]]
        )

    def groups(a, b):
        if not all(hasattr(snakemake.input, f"groups_{name}") for name in (a, b)):
            return None
        return recovered(a), recovered(b)

    pairs = snakemake.params.pairs
    tasks = [
        partial(pair_row, a, b, k, snakemake.params.seed, release(a), release(b), groups(a, b))
        for a, b, k in pairs
    ]
    rows = [
        {"release_a": a, "release_b": b} | row
        for (a, b, _), row in zip(
            pairs, map_tasks(tasks, threads=snakemake.threads, shared=True), strict=True
        )
    ]
    write_parquet(pd.DataFrame(rows), snakemake.output.rows)
