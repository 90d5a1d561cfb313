"""Logging set-up and progress reporting for long steps.

Log lines carry counts and timings only: never patient rows, identifiers or passwords.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import re
import resource
import sys
import time
import traceback
from collections.abc import Iterator
from pathlib import Path

from tqdm import tqdm

__all__ = [
    "DEBUG_ENV",
    "FINISH_USAGE",
    "Progress",
    "configure",
    "get_logger",
    "internal_error_text",
    "job_tag",
    "process_usage",
    "run_stage",
]

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def get_logger(name: str) -> logging.Logger:
    """Return the package logger ``mimic_deid.<name>``."""
    return logging.getLogger(f"mimic_deid.{name}" if not name.startswith("mimic_deid") else name)


def job_tag(rule: str, log_file: str | None = None) -> str:
    """The tag that tells one job's log lines from its parallel siblings'.

    A job's log file is unique to it (``logs/stays/dk50/fk10-.../genetic/deidentify.log``), so
    its path below ``logs/``, without the suffix, is the tag; without a log file, the rule.
    """
    if not log_file:
        return rule
    path = Path(log_file).with_suffix("")
    parts = path.parts[1:] if path.parts[:1] == ("logs",) else path.parts
    return "/".join(parts) or rule


def configure(
    log_file: str | None = None, level: int = logging.INFO, tag: str | None = None
) -> None:
    """Send package logs to ``log_file`` (a Snakemake ``log:``) and to stderr.

    With ``tag``, every line carries ``[tag]`` after its level (see :func:`job_tag`).
    """
    root = logging.getLogger("mimic_deid")
    root.setLevel(level)
    root.handlers.clear()
    fmt = FORMAT if tag is None else FORMAT.replace("%(name)s", f"[{tag}] %(name)s")
    formatter = logging.Formatter(fmt, datefmt="%Y-%m-%d %H:%M:%S")
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file:
        handlers.append(logging.FileHandler(log_file, mode="w", encoding="utf-8"))
        os.chmod(log_file, 0o600)  # owner-only, as the logs/ directory (made so at start-up)
    for handler in handlers:
        handler.setFormatter(formatter)
        root.addHandler(handler)
    root.propagate = False


class _LogStream(io.TextIOBase):
    """A text stream for ``tqdm`` that turns each refreshed progress line into a log record."""

    def __init__(self, logger: logging.Logger) -> None:
        super().__init__()
        self.logger = logger

    def write(self, text: str) -> int:
        line = text.strip("\r\n\x1b[A ")
        if line:
            self.logger.info(line)
        return len(text)

    def flush(self) -> None:
        return None


class Progress:
    """Progress of a long step as periodic log lines: done/total, percent, rate and ETA.

    A thin wrapper over :class:`tqdm.tqdm` (counting, rate and ETA estimation) whose output
    goes through the stage's logger, so each line carries the job's tag (see
    :func:`run_stage`) and lands in the rule's log file as well as on stderr. A line is written
    at most every ``every_s`` seconds and once when the step ends; a step shorter than
    ``every_s`` writes only its final line.

    Parameters
    ----------
    label : str
        What is counted, e.g. ``"genetic L=48"``.
    total : int or None
        The amount of work, in ``unit``; None when unknown (rows of a streamed table).
    logger : logging.Logger
        Where the lines go.
    every_s : float, default 10.0
        Minimum seconds between two lines.
    unit : str, default "items"
        The unit of ``total`` and of the rate, e.g. ``"series"``, ``"rows"``.
    """

    def __init__(
        self,
        label: str,
        total: int | None,
        logger: logging.Logger,
        every_s: float = 10.0,
        unit: str = "items",
    ) -> None:
        known = "{desc}: {n_fmt}/{total_fmt}{unit} ({percentage:.0f}%) in {elapsed}, {rate_fmt}, ETA {remaining}"
        unknown = "{desc}: {n_fmt}{unit} in {elapsed}, {rate_fmt}"
        self._bar = tqdm(
            total=total,
            desc=label,
            unit=f" {unit}",
            unit_scale=False,
            mininterval=every_s,
            maxinterval=max(every_s, 1.0),
            delay=every_s,
            bar_format=known if total else unknown,
            file=_LogStream(logger),
            ascii=True,
            dynamic_ncols=False,
            leave=True,
        )
        self._final = False

    @property
    def done(self) -> int:
        """Work done so far, in ``unit``."""
        return int(self._bar.n)

    def update(self, n: int = 1) -> None:
        """Record ``n`` more units of work done."""
        self._bar.update(n)

    def close(self) -> None:
        """Write the final line (once) and stop."""
        if not self._final:
            self._final = True
            self._bar.delay = 0  # a step shorter than every_s still gets its final line
            self._bar.close()


#: Set (to anything) to let an unexpected exception end a stage with its full traceback.
DEBUG_ENV = "MIMIC_DEID_DEBUG"


def internal_error_text(exc: BaseException) -> str:
    """One line for an exception no check anticipated (a bug, or a library's error about the
    data): its type and where it was raised, without its message, which may quote a value of
    the data (pandas, NumPy and Arrow errors often do)."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno} in {frames[-1].name}"
    return (
        f"{type(exc).__name__}{where if frames else ''}; its message is not shown, as it may "
        f"quote input data (set {DEBUG_ENV}=1 to see the traceback, on a terminal only)"
    )


@contextlib.contextmanager
def run_stage(rule: str, log_file: str | None = None) -> Iterator[logging.Logger]:
    """Run one workflow stage: log to ``log_file`` and stderr, report errors in one line.

    A :class:`~mimic_deid.core.errors.MimicDeidError` (bad input, bad parameter, failed privacy
    check, an output that cannot be written) ends the process with status 1 and the single
    line ``mimic-deid error in rule '<rule>': <message>`` on stderr, never a traceback; so does
    any other ``OSError`` (e.g. an input without read permission), with its file name. Any
    other exception ends it with ``mimic-deid internal error in rule '<rule>': <type> at
    <file>:<line> ...`` (:func:`internal_error_text`): its message is withheld, since a
    library's message may quote a value of the data; ``MIMIC_DEID_DEBUG=1`` shows the
    traceback instead.

    Parameters
    ----------
    rule : str
        The workflow rule (e.g. ``snakemake.rule``), named in the log and the error line.
    log_file : str, optional
        The rule's ``log:`` file.

    Yields
    ------
    logging.Logger
        The stage's logger.
    """
    from mimic_deid.core.errors import MimicDeidError

    configure(log_file, tag=job_tag(rule, log_file))
    logger = get_logger(f"stage.{rule}")
    start = time.monotonic()
    try:
        yield logger
    except MimicDeidError as exc:
        logger.error("%s", exc)
        print(f"mimic-deid error in rule '{rule}': {exc}", file=sys.stderr)
        sys.exit(1)
    except OSError as exc:  # an environment fault outside the writers, e.g. an unreadable input
        text = exc.strerror or " ".join(str(exc).split())
        if exc.filename:
            text = f"{text}: {exc.filename}"
        logger.error("%s", text)
        print(f"mimic-deid error in rule '{rule}': {text}", file=sys.stderr)
        sys.exit(1)
    except Exception as exc:
        if os.environ.get(DEBUG_ENV):
            raise
        text = internal_error_text(exc)
        logger.error("%s", text)
        print(f"mimic-deid internal error in rule '{rule}': {text}", file=sys.stderr)
        sys.exit(1)
    cpu, peak = process_usage()
    logger.info("rule %s finished in %.1f s (CPU %.1f s, peak RSS %.0f MB)",
                rule, time.monotonic() - start, cpu, peak)  # fmt: skip


#: The end of a stage's last log line (:func:`run_stage`): the job's CPU seconds and its peak
#: RSS in MB as the operating system accounted them (:func:`process_usage`).
FINISH_USAGE = re.compile(r"\(CPU (?P<cpu>[0-9.]+) s, peak RSS (?P<rss>[0-9]+) MB\)$")


def process_usage() -> tuple[float, float]:
    """CPU seconds and peak resident set (MB) of this process and its finished children.

    The operating system's own accounting (``getrusage``): user + system time of this process
    since it started (imports included) plus that of every child process it has waited for
    (the worker processes of a pool once the pool is closed); the peak RSS is that of the
    largest single process of them, measured exactly, not sampled (a forked worker's counts
    the pages it shares with its parent). Snakemake's ``benchmark:`` records instead sample
    the process tree every 0.5 s for 15 s and then every 30 s, so a job's last up to 30 s of
    CPU, and a peak between samples, go unseen there.

    Returns
    -------
    cpu_s : float
        Seconds.
    peak_rss_mb : float
        Megabytes (2**20 bytes).
    """
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
    return cpu, max(me.ru_maxrss, kids.ru_maxrss) / 1024
