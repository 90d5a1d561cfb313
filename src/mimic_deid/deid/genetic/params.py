"""The genetic optimiser's parameters (seed §4.2, Table 6.2) and their method-label form.

:class:`GeneticParams` holds one point of the optimiser (fitness variant, population,
selection, mutation, initial population, stopping rule, layout); the algorithm they steer is
specified in :mod:`mimic_deid.deid.genetic.search`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from mimic_deid.core.errors import ConfigError

FITNESS_VARIANTS = ("annealed", "DF", "CI", "NA")
LAYOUTS = ("series_dimension", "joint")
INITS = ("gaussian", "mean_shift")
#: (parameter, label key, type) in the order of a method label (after the fitness): see
#: :mod:`mimic_deid.deid.methods`.
LABEL_PARAMS: tuple[tuple[str, str, type], ...] = (
    ("population", "pop", int),
    ("tournament", "tour", int),
    ("parents", "par", int),
    ("mutation_sd", "msd", float),
    ("mutation_prob", "mp", float),
    ("init_sd", "isd", float),
    ("patience", "pat", int),
    ("max_iterations", "max", int),
    ("normalise_features", "norm", bool),
    ("layout", "lay", str),
    ("init", "init", str),
)


@dataclass(frozen=True)
class GeneticParams:
    """Parameters of the genetic optimiser (names as in the config's ``deid.methods.genetic``).

    Attributes
    ----------
    fitness : {"annealed", "DF", "CI", "NA"}
    population : int
        Chromosomes per series (>= 2).
    tournament : int
        Chromosomes drawn per tournament (``parents <= tournament <= population``).
    parents : int
        Parents per child (>= 1; 1 disables crossover).
    mutation_sd : float
        Sd of the mutation noise, in the unit of each dimension (>= 0).
    mutation_prob : float
        Probability that a gene mutates, in [0, 1].
    init_sd : float
        Sd of the initial population (>= 0).
    patience : int
        Generations without improvement before a series stops (>= 1).
    max_iterations : int
        Maximum number of generations (>= 1).
    normalise_features : bool
        Measure every dimension in units of its class-wide sd (module docstring).
    layout : {"series_dimension", "joint"}
        One problem per (series, feature dimension), or one per series.
    init : {"gaussian", "mean_shift"}
        Initial population around 0, or around the mean-meeting shift.
    """

    fitness: str = "NA"
    population: int = 24
    tournament: int = 5
    parents: int = 2
    mutation_sd: float = 3.0
    mutation_prob: float = 0.2
    init_sd: float = 1.0
    patience: int = 100
    max_iterations: int = 600
    normalise_features: bool = False
    layout: str = "series_dimension"
    init: str = "mean_shift"

    def __post_init__(self) -> None:
        def bad(name: str, expected: str) -> ConfigError:
            return ConfigError(
                f"genetic optimiser parameter '{name}': expected {expected}, "
                f"got {getattr(self, name)!r}"
            )

        if self.fitness not in FITNESS_VARIANTS:
            raise bad("fitness", f"one of {FITNESS_VARIANTS}")
        if self.layout not in LAYOUTS:
            raise bad("layout", f"one of {LAYOUTS}")
        if self.init not in INITS:
            raise bad("init", f"one of {INITS}")
        for name in ("population", "tournament", "parents", "patience", "max_iterations"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
                raise bad(name, "an integer >= 1")
        if self.population < 2:
            raise bad("population", "an integer >= 2")
        if not self.parents <= self.tournament <= self.population:
            raise bad("tournament", f"an integer in [parents={self.parents}, population]")
        for name in ("mutation_sd", "init_sd"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise bad(name, "a finite number >= 0")
        p = self.mutation_prob
        if not isinstance(p, int | float) or not 0 <= p <= 1:
            raise bad("mutation_prob", "a probability in [0, 1]")
        if not isinstance(self.normalise_features, bool | np.bool_):
            raise bad("normalise_features", "a boolean")

    @classmethod
    def from_dict(cls, params: Mapping[str, Any]) -> GeneticParams:
        """Build from a mapping such as ``parse_method_label(label)[1]``.

        Missing keys take the defaults; unknown keys raise ``ConfigError``. Values are cast to
        the types of :data:`LABEL_PARAMS`.
        """
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(params) - known)
        if unknown:
            raise ConfigError(
                f"genetic optimiser: unknown parameter(s) {unknown}, expected some of "
                f"{sorted(known)}"
            )
        kwargs: dict[str, Any] = {}
        if "fitness" in params:
            kwargs["fitness"] = str(params["fitness"])
        for name, _, typ in LABEL_PARAMS:
            if name not in params:
                continue
            raw = params[name]
            try:
                if typ is str:
                    value: Any = str(raw)
                elif typ is bool:
                    if isinstance(raw, str):
                        raise ValueError(raw)
                    if raw not in (0, 1):
                        raise ValueError(raw)
                    value = bool(raw)
                elif typ is int:
                    if isinstance(raw, bool) or float(raw) != int(raw):
                        raise ValueError(raw)
                    value = int(raw)
                else:
                    value = float(raw)
            except (TypeError, ValueError):
                raise ConfigError(
                    f"genetic optimiser parameter '{name}': expected {typ.__name__}, got {raw!r}"
                ) from None
            kwargs[name] = value
        return cls(**kwargs)
