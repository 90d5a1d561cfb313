"""Command-line entry points: ``python -m mimic_deid <command> ...`` (or ``mimic-deid``).

Each command is a subparser with its own ``_cmd_*`` handler, so new commands are added by
writing one ``_add_*`` function and registering it in ``build_parser``. Bad arguments exit
with status 2 and a one-line message; a library ``MimicDeidError`` (bad configuration, bad
input) is reported the same way, without a traceback.

Commands:
    synth   write a synthetic MIMIC-III v1.4 CSV.gz copy
            (``--subjects N --seed S --out DIR [--chunk-subjects K]``)
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence

from mimic_deid.core import logs
from mimic_deid.core.errors import MimicDeidError

PROG = "mimic-deid"
EXIT_USAGE = 2


def _int_at_least(minimum: int) -> Callable[[str], int]:
    """argparse type: an integer >= ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    parse.__name__ = f"integer >= {minimum}"
    return parse


def _number_in(low: float, high: float) -> Callable[[str], float]:
    """argparse type: a finite number in [``low``, ``high``]."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not low <= value <= high:  # NaN fails too
            raise argparse.ArgumentTypeError(f"must be from {low:g} to {high:g}, got {text}")
        return value

    parse.__name__ = f"number from {low:g} to {high:g}"
    return parse


def _other_chart_rows(text: str) -> float:
    """argparse type of ``--other-chart-rows``: a number in the generator's range
    (:data:`mimic_deid.synthetic.quirks.MAX_OTHER_CHART_ROWS`), imported only when the option
    is given (the generator's modules load NumPy and Arrow)."""
    from mimic_deid.synthetic.quirks import MAX_OTHER_CHART_ROWS

    return _number_in(0.0, MAX_OTHER_CHART_ROWS)(text)


def _cmd_synth(args: argparse.Namespace) -> int:
    from mimic_deid.synthetic import generate

    summary = generate(
        args.out,
        subjects=args.subjects,
        seed=args.seed,
        chunk_subjects=args.chunk_subjects,
        other_chart_rows=args.other_chart_rows,
    )
    print(json.dumps(summary, indent=2, sort_keys=True))
    return 0


def _add_synth(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "synth",
        help="write a synthetic MIMIC-III v1.4 CSV.gz copy",
        description="Generate a synthetic MIMIC-III v1.4 copy (PATIENTS, ADMISSIONS, ICUSTAYS, "
        "CHARTEVENTS, LABEVENTS, OUTPUTEVENTS, D_ITEMS, D_LABITEMS as .csv.gz) into DIR. "
        "The output depends only on --subjects, --seed and --other-chart-rows.",
    )
    p.add_argument(
        "--subjects",
        type=_int_at_least(1),
        required=True,
        metavar="N",
        help="number of patients (46520 = full MIMIC-III size)",
    )
    p.add_argument(
        "--seed", type=_int_at_least(0), required=True, metavar="S", help="random seed (>= 0)"
    )
    p.add_argument("--out", required=True, metavar="DIR", help="output directory (replaced)")
    p.add_argument(
        "--chunk-subjects",
        type=_int_at_least(1),
        default=500,
        metavar="K",
        help="subjects generated before each write (memory bound; default 500)",
    )
    p.add_argument(
        "--other-chart-rows",
        type=_other_chart_rows,
        default=0.0,
        metavar="R",
        help="CHARTEVENTS rows of non-benchmark items added per generated row, on average "
        "(4.2: real MIMIC-III's mix, ~17 %% of rows carry a benchmark item; default 0)",
    )
    p.set_defaults(func=_cmd_synth)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mimic-deid")
    except PackageNotFoundError:  # running from a source tree that is not installed
        from mimic_deid import __version__

        return __version__


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with one subparser per command."""
    parser = argparse.ArgumentParser(
        prog=PROG, description="mimic-deid: de-identification of MIMIC-III ICU time series."
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {_version()}")
    parser.add_argument("--log-file", metavar="FILE", help="also write the log to FILE")
    parser.add_argument("--quiet", action="store_true", help="log warnings and errors only")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_synth(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command in ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)  # exits with status 2 and a message on bad arguments
    logs.configure(args.log_file, level=30 if args.quiet else 20)
    try:
        return args.func(args)
    except MimicDeidError as exc:
        print(f"{PROG} {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
