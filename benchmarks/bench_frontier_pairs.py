"""CPU time of the cross-release pairing of single release pairs of a finished run.

Rule ``cross_release`` pairs every two releases of the sweep, so its cost grows with the
square of the sweep's releases: this measures what one pair costs (``pairing_rate`` and
``shape_pairing_rate``, as the rule calls them), to size the default frontier sweep
(benchmarks/README.md, "The default frontier sweep"). One process, one BLAS thread; the
figure is the process's CPU time, which a loaded machine inflates less than the wall time.

    python benchmarks/bench_frontier_pairs.py RUN_DIR

``RUN_DIR`` is the work directory of a 3,000-subject default run (``full_scale.py``) whose
fk 5, 10 and 20 ``mdav`` and fk 10 genetic and ad hoc releases are staged.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from mimic_deid.core.threads import limit_threads

#: The genetic point of the shipped config.
GENETIC = (
    "genetic-NA-pop24-tour5-par2-msd3-mp0.2-isd1-pat100-max600-norm0-layseries_dimension-"
    "initmean_shift"
)
#: Release name -> its point's folder below results/private.
RELEASES = {
    "ihm48_5_mdav": "ihm48/dk50/fk5-range/mdav",
    "ihm48_10_mdav": "ihm48/dk50/fk10-range/mdav",
    "ihm48_20_mdav": "ihm48/dk50/fk20-range/mdav",
    "ihm48_10_genetic": f"ihm48/dk50/fk10-range/{GENETIC}",
    "stays_10_genetic": f"stays/dk50/fk10-range/{GENETIC}",
    "stays_10_adhoc": "stays/dk50/fk10-range/adhoc-it50-ns0.01",
}
#: The pairs timed: two of each kind (ihm48 x ihm48, ihm48 x stays, stays x stays).
PAIRS = (
    ("ihm48_5_mdav", "ihm48_10_mdav"),
    ("ihm48_10_genetic", "ihm48_20_mdav"),
    ("ihm48_10_mdav", "stays_10_genetic"),
    ("ihm48_10_genetic", "stays_10_adhoc"),
    ("stays_10_genetic", "stays_10_adhoc"),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="the run's work directory")
    run = parser.parse_args().run
    with limit_threads(1):
        import pandas as pd

        from mimic_deid.deid import KEY, dims_of
        from mimic_deid.evaluate.pairing import (
            pair_generator,
            pairing_rate,
            series_shapes,
            series_statistics,
            shape_pairing_rate,
        )

        loaded = {}
        for name, folder in RELEASES.items():
            base = run / "results" / "private" / folder
            series = pd.read_parquet(base / "staged" / "series.parquet")
            keys = pd.read_parquet(base / "pseudonyms.parquet").set_index("pseudonym")[KEY]
            dims = dims_of(series)
            index = pd.read_parquet(base / "staged" / "index.parquet")
            loaded[name] = (
                series_statistics(series, dims),
                keys,
                (*series_shapes(series, dims), dims),
                index,
            )
        for a, b in PAIRS:
            (stats_a, keys_a, shapes_a, index_a), (stats_b, keys_b, shapes_b, index_b) = (
                loaded[a],
                loaded[b],
            )
            cells = {"index_a": index_a, "index_b": index_b}
            cpu, wall = time.process_time(), time.perf_counter()
            pairing_rate(stats_a, keys_a, stats_b, keys_b, pair_generator(1, a, b), **cells)
            shape_pairing_rate(shapes_a, keys_a, shapes_b, keys_b, pair_generator(1, a, b), **cells)
            print(
                f"{a} x {b}: {time.process_time() - cpu:.2f} CPU-s, "
                f"{time.perf_counter() - wall:.2f} s wall"
            )


if __name__ == "__main__":
    main()
