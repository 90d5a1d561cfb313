"""De-identification: duration k-classes, Mondrian feature targets, release methods, the
pseudonymous release and its privacy check."""

from mimic_deid.deid.check import check_release, check_sweep_point
from mimic_deid.deid.classes import (
    KEY,
    ClassArray,
    class_arrays,
    iter_class_arrays,
    map_classes,
    trim_to_classes,
)
from mimic_deid.deid.duration import GROUP_BY_SPLIT, deid_groups, duration_classes
from mimic_deid.deid.features import FeatureSpec, compute_features, feature_spec
from mimic_deid.deid.methods import (
    REGISTRY,
    ReleaseMethod,
    apply_method,
    method_label,
    method_labels,
    parse_method_label,
    run_method,
)
from mimic_deid.deid.release import assemble_release, make_pseudonyms, pseudonymous_release
from mimic_deid.deid.targets import mondrian_targets
from mimic_deid.deid.tuning import tuning_grid_summary, tuning_table

__all__ = [
    "GROUP_BY_SPLIT",
    "KEY",
    "REGISTRY",
    "ClassArray",
    "FeatureSpec",
    "ReleaseMethod",
    "apply_method",
    "assemble_release",
    "check_release",
    "check_sweep_point",
    "class_arrays",
    "compute_features",
    "deid_groups",
    "duration_classes",
    "feature_spec",
    "iter_class_arrays",
    "make_pseudonyms",
    "map_classes",
    "method_label",
    "method_labels",
    "mondrian_targets",
    "parse_method_label",
    "pseudonymous_release",
    "run_method",
    "trim_to_classes",
    "tuning_grid_summary",
    "tuning_table",
]
