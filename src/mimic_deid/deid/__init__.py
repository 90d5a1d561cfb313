"""De-identification: duration k-classes, demographic cells, Mondrian feature targets, release methods, the
pseudonymous release and its privacy check."""

from mimic_deid.deid.apply import apply_method
from mimic_deid.deid.check import check_linkage_bound, check_release, check_sweep_point
from mimic_deid.deid.claim_checks import check_plausible_values
from mimic_deid.deid.classes import (
    KEY,
    ClassArray,
    class_arrays,
    dims_of,
    iter_class_arrays,
    map_classes,
    read_release_classes,
    trim_to_classes,
)
from mimic_deid.deid.demographics import DemographicCodes, demographic_cells, encode_demographics
from mimic_deid.deid.duration import (
    DURATION_METHODS,
    GROUP_BY_SPLIT,
    LABELLED,
    LABELS,
    deid_groups,
    duration_classes,
    duration_uniqueness,
    unpublished_groups,
)
from mimic_deid.deid.features import (
    RELEASE_VARIABLES,
    FeatureSpec,
    attacker_features,
    compute_features,
    feature_spec,
    protected_features,
    released_variables,
)
from mimic_deid.deid.kapra import KPGrouping, check_kp_groups, kp_anonymise, kp_summary
from mimic_deid.deid.methods import (
    REGISTRY,
    ReleaseMethod,
    method_label,
    method_labels,
    parse_method_label,
    run_method,
)
from mimic_deid.deid.plausible import PlausibleValues, project
from mimic_deid.deid.release import (
    REFUSED_FILE,
    assemble_release,
    make_pseudonyms,
    pseudonymous_release,
    publish_release,
    release_verdict,
)
from mimic_deid.deid.targets import mondrian_targets
from mimic_deid.deid.tuning import (
    fitness_comparison,
    tuning_grid_summary,
    tuning_labels,
    tuning_table,
    tuning_tables_summary,
)

__all__ = [
    "REFUSED_FILE",
    "DURATION_METHODS",
    "GROUP_BY_SPLIT",
    "KEY",
    "LABELLED",
    "LABELS",
    "REGISTRY",
    "RELEASE_VARIABLES",
    "ClassArray",
    "DemographicCodes",
    "FeatureSpec",
    "KPGrouping",
    "PlausibleValues",
    "ReleaseMethod",
    "apply_method",
    "attacker_features",
    "assemble_release",
    "check_kp_groups",
    "check_linkage_bound",
    "check_plausible_values",
    "check_release",
    "check_sweep_point",
    "class_arrays",
    "compute_features",
    "deid_groups",
    "demographic_cells",
    "dims_of",
    "duration_classes",
    "duration_uniqueness",
    "unpublished_groups",
    "encode_demographics",
    "feature_spec",
    "fitness_comparison",
    "iter_class_arrays",
    "kp_anonymise",
    "kp_summary",
    "make_pseudonyms",
    "map_classes",
    "method_label",
    "method_labels",
    "read_release_classes",
    "mondrian_targets",
    "parse_method_label",
    "project",
    "protected_features",
    "pseudonymous_release",
    "publish_release",
    "release_verdict",
    "released_variables",
    "run_method",
    "trim_to_classes",
    "tuning_grid_summary",
    "tuning_labels",
    "tuning_table",
    "tuning_tables_summary",
]
