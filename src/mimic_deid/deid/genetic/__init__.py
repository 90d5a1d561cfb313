"""The genetic optimiser (seed §4.2, fitness variants of §6.2), by job.

- :mod:`~mimic_deid.deid.genetic.params`: :class:`GeneticParams` and their label form;
- :mod:`~mimic_deid.deid.genetic.search`: the algorithm (specified in its docstring) on one
  chunk of problems, with its compiled loops in ``_kernels`` (Numba);
- :mod:`~mimic_deid.deid.genetic.plan`: a duration class into chunks, the chunks over worker
  processes, the release method's summary.
"""

from mimic_deid.deid.genetic.params import (
    FITNESS_VARIANTS,
    INITS,
    LABEL_PARAMS,
    LAYOUTS,
    GeneticParams,
)
from mimic_deid.deid.genetic.plan import (
    GeneticPlan,
    chunk_size,
    optimise_genetic,
    plan_genetic,
    summarise,
)
from mimic_deid.deid.genetic.search import (
    fitness_key,
    mean_only_targets,
    met_at_start,
    run_chunk,
)

__all__ = [
    "FITNESS_VARIANTS",
    "INITS",
    "LABEL_PARAMS",
    "LAYOUTS",
    "GeneticParams",
    "GeneticPlan",
    "chunk_size",
    "fitness_key",
    "mean_only_targets",
    "met_at_start",
    "optimise_genetic",
    "plan_genetic",
    "run_chunk",
    "summarise",
]
