"""One function per workflow rule: read the rule's input files, call the algorithms, write
the outputs atomically. Snakemake scripts in ``workflow/scripts`` only forward paths and
parameters here, so every step can be run and tested without Snakemake.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from mimic_deid.errors import MimicDeidError
from mimic_deid.logs import configure, get_logger


def run(snakemake: Any, step: Callable[..., Any], **kwargs: Any) -> Any:
    """Run ``step(**kwargs)`` inside a Snakemake script with logging to the rule's log.

    A :class:`MimicDeidError` is reported as one clear line (no traceback) and exits 1.
    """
    log_file = snakemake.log[0] if len(snakemake.log) else None
    configure(log_file)
    logger = get_logger(f"steps.{step.__name__}")
    start = time.monotonic()
    try:
        result = step(**kwargs)
    except MimicDeidError as exc:
        logger.error("%s", exc)
        print(f"mimic-deid error in rule '{snakemake.rule}': {exc}", file=sys.stderr)
        sys.exit(1)
    logger.info("%s finished in %.1f s", step.__name__, time.monotonic() - start)
    return result
