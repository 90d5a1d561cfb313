"""Stream a MIMIC-III PostgreSQL build (MIT-LCP/mimic-code) into typed Arrow batches.

Data leave the server through ``COPY (SELECT ...) TO STDOUT WITH (FORMAT csv, HEADER)``: a
thread runs ``cursor.copy_expert`` into one end of an ``os.pipe`` while the shared CSV parser
(:func:`mimic_deid.sources.csv_source.parse_csv_stream`, the one the CSV source uses) reads
the other end block by block, so memory stays bounded and both sources give identical Arrow
types and values.

Identifiers (schema, table, columns) are composed with ``psycopg2.sql.Identifier``; the itemid
filter is a literal adapted by psycopg2 (``itemid = ANY(ARRAY[...])``, which lets PostgreSQL
prune the ``PARTITION BY RANGE (itemid)`` partitions of CHARTEVENTS). Each session forces
``DateStyle=ISO, YMD``, ``TimeZone=UTC`` and ``extra_float_digits=3`` so that neither the
server's nor the user's settings change timestamps or round floats; timestamp columns are
selected as ``col::timestamp`` (a no-op for mimic-code's ``timestamp without time zone``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from collections.abc import Iterable, Iterator
from typing import Any

import psycopg2
import psycopg2.extensions
from psycopg2 import sql

from mimic_deid.core.errors import InputDataError, SourceConnectionError
from mimic_deid.core.logs import get_logger
from mimic_deid.sources import tables
from mimic_deid.sources.csv_source import SourceReader, parse_csv_stream
from mimic_deid.sources.dsn import dsn_params

log = get_logger(__name__)

PIPE_BUFFER = 1 << 20
COPY_READ_SIZE = 1 << 18
ROW_BYTES = 80  # approximate bytes per COPY output row of the event columns
MIN_BLOCK_BYTES = 1 << 16
MAX_BLOCK_BYTES = 1 << 22
DEFAULT_CONNECT_TIMEOUT = 10  # seconds, unless the DSN or PGCONNECT_TIMEOUT says otherwise
SESSION_SETTINGS = (
    "SET DateStyle TO 'ISO, YMD'",
    "SET TimeZone TO 'UTC'",
    "SET extra_float_digits TO 3",
    "SET client_encoding TO 'UTF8'",
)

# --------------------------------------------------------------------------- connection


def describe_target(dsn: str) -> dict[str, str]:
    """host, port, dbname, user the DSN + PG* environment point at (no password)."""
    params = dsn_params(dsn)
    env = os.environ
    user = params.get("user") or env.get("PGUSER") or env.get("USER", "?")
    return {
        "host": params.get("host") or params.get("hostaddr") or env.get("PGHOST") or "local socket",
        "port": params.get("port") or env.get("PGPORT") or "5432",
        "dbname": params.get("dbname") or env.get("PGDATABASE") or user,
        "user": user,
    }


def _target_text(dsn: str) -> str:
    t = describe_target(dsn)
    return f"host={t['host']} port={t['port']} dbname={t['dbname']} user={t['user']}"


def _scrub(text: str, dsn: str) -> str:
    """Remove any password (from the DSN or PGPASSWORD) from ``text``."""
    secrets = [dsn_params(dsn).get("password"), os.environ.get("PGPASSWORD")]
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


#: SQLSTATE classes whose server message may quote a value of the data (data exception,
#: integrity constraint violation): their text is not shown, only the condition's name.
DATA_SQLSTATE_CLASSES = ("22", "23")


def _server_reason(exc: psycopg2.Error, dsn: str) -> str:
    """The server's reason for ``exc``, without a password and without a data value: for a
    data exception (e.g. 'invalid input syntax for type timestamp: "<value>"') only the
    SQLSTATE and its condition name."""
    code = getattr(exc, "pgcode", None)
    if code is None or code[:2] in DATA_SQLSTATE_CLASSES:
        from psycopg2 import errorcodes

        name = (errorcodes.lookup(code) or "unknown").lower() if code else "no SQLSTATE"
        return (
            f"SQLSTATE {code or '-'} ({name}); the server's message is not shown, as it may "
            "quote a value of the data"
        )
    return _scrub(" ".join(str(exc).split()), dsn)


def connect(dsn: str = "", readonly: bool = True) -> psycopg2.extensions.connection:
    """Open a session with ISO dates, UTC and exact floats; map failures to
    ``SourceConnectionError`` naming host/port/dbname (never the password).
    """
    params = dsn_params(dsn)
    kwargs: dict[str, Any] = {}
    if "connect_timeout" not in params and "PGCONNECT_TIMEOUT" not in os.environ:
        kwargs["connect_timeout"] = DEFAULT_CONNECT_TIMEOUT
    try:
        conn = psycopg2.connect(dsn, **kwargs)
    except psycopg2.Error as exc:
        reason = _scrub(" ".join(str(exc).split()), dsn)
        raise SourceConnectionError(
            f"cannot connect to PostgreSQL at {_target_text(dsn)}: {reason}"
        ) from None
    try:
        conn.set_session(readonly=readonly)
        with conn.cursor() as cur:
            for stmt in SESSION_SETTINGS:
                cur.execute(stmt)
        conn.commit()  # the settings persist for the session
    except BaseException:
        conn.close()
        raise
    return conn


# --------------------------------------------------------------------------- COPY pump


class CopyPump:
    """Run ``COPY ... TO STDOUT`` in a thread, writing into a pipe; ``reader`` is the other end.

    ``close()`` closes the read end (which stops the writer with EPIPE if the consumer gave up
    early), joins the thread and returns the exception the COPY raised, if any.
    """

    def __init__(self, conn: psycopg2.extensions.connection, query: str) -> None:
        rfd, wfd = os.pipe()
        self.reader = os.fdopen(rfd, "rb", buffering=PIPE_BUFFER)
        self.error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._run, args=(conn, query, wfd), name="pg-copy", daemon=True
        )
        self._thread.start()

    def _run(self, conn: psycopg2.extensions.connection, query: str, wfd: int) -> None:
        try:
            with os.fdopen(wfd, "wb", buffering=PIPE_BUFFER) as out, conn.cursor() as cur:
                cur.copy_expert(query, out, size=COPY_READ_SIZE)
        except BaseException as exc:
            self.error = exc

    def close(self) -> BaseException | None:
        self.reader.close()
        self._thread.join()
        return self.error


# --------------------------------------------------------------------------- column types

#: The PostgreSQL types (as ``format_type`` spells them) whose values each Arrow type of
#: :mod:`mimic_deid.sources.tables` reads without loss, and the words messages use for it.
COLUMN_TYPES: dict[str, tuple[str, tuple[str, ...]]] = {
    "int64": ("an integer type", ("smallint", "integer", "bigint")),
    "double": (
        "a numeric type",
        ("double precision", "real", "numeric", "smallint", "integer", "bigint"),
    ),
    "timestamp[s]": (
        "a timestamp type",
        ("timestamp without time zone", "timestamp with time zone", "date"),
    ),
    "string": ("a text type", ("character varying", "character", "text")),
}


def column_types(type_: Any) -> tuple[str, tuple[str, ...]]:
    """(words, accepted PostgreSQL types) of an Arrow type of the table specs."""
    return COLUMN_TYPES[str(type_)]


# --------------------------------------------------------------------------- the source


class PostgresSource(SourceReader):
    """A mimic-code PostgreSQL database (lower-case tables and columns in ``schema``).

    Implements the reader protocol of :func:`mimic_deid.sources.extract.extract_raw`.

    Parameters
    ----------
    dsn:
        libpq connection string or URI; empty: the PG* environment variables.
    schema:
        Schema holding the MIMIC-III tables (mimic-code: ``mimiciii``).
    """

    kind = "postgres"

    def __init__(self, dsn: str = "", schema: str = "mimiciii") -> None:
        self.dsn = dsn or ""
        self.schema = schema
        dsn_params(self.dsn)  # fail early, without echoing it, if the DSN is malformed

    def __repr__(self) -> str:
        return f"PostgresSource({_target_text(self.dsn)} schema={self.schema})"

    def describe(self) -> str:
        """The source as messages name it: ``PostgreSQL schema <schema> (host=... user=...)``."""
        return f"PostgreSQL schema {self.schema} ({_target_text(self.dsn)})"

    def _require_schema(self, cur: psycopg2.extensions.cursor, where: str) -> None:
        """``InputDataError`` naming ``where`` (what was read) when the schema does not exist."""
        cur.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (self.schema,))
        if cur.fetchone() is None:
            raise InputDataError(
                f"{where}: schema '{self.schema}' does not exist "
                "(check config parameter 'source/postgres/schema')"
            )

    def missing_tables(self, stems: Iterable[str]) -> list[str]:
        """The table names (``"TRANSFERS"``) among ``stems`` that the schema does not hold.

        Looked up as the reader looks a table up (:meth:`_table_columns`): a table,
        partitioned table, view, materialised view or foreign table whose lower-case name is
        the stem's. Raises ``InputDataError`` when the schema does not exist and
        ``SourceConnectionError`` when the server cannot be reached.
        """
        stems = list(stems)
        with contextlib.closing(connect(self.dsn)) as conn, conn.cursor() as cur:
            self._require_schema(cur, self.describe())
            cur.execute(
                """
                SELECT DISTINCT lower(c.relname)
                FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = %s AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
                """,
                (self.schema,),
            )
            present = {row[0] for row in cur.fetchall()}
        return [s for s in stems if s.lower() not in present]

    def none_found_advice(self, stems: Iterable[str]) -> str:
        """What to do when the schema holds none of the tables ``stems``."""
        return (
            "give the schema that holds the mimic-code tables (mimic-code builds them in "
            "'mimiciii') in config parameter 'source/postgres/schema'"
        )

    def check_connection(self) -> None:
        """Connect once (raises ``SourceConnectionError`` when the server is unreachable)."""
        connect(self.dsn).close()

    def fingerprint(self) -> str:
        """A digest of the modification state of every table in the schema.

        Combines, for each table and partition of ``schema``, its storage file
        (``pg_class.relfilenode``: changed by TRUNCATE and table rewrites) and the server's
        cumulative counts of inserted, updated and deleted rows (``pg_stat_all_tables``). Any
        change to the data changes the digest; a server restart after a crash (which resets
        the counts) or a ``VACUUM FULL`` changes it too, which only costs a re-extraction.
        Row values are never read.

        Returns
        -------
        str
            ``"sha256:<hex>"``.
        """
        query = """
            SELECT c.relname, c.relfilenode,
                   coalesce(s.n_tup_ins, 0), coalesce(s.n_tup_upd, 0), coalesce(s.n_tup_del, 0)
            FROM pg_class c
            JOIN pg_namespace n ON n.oid = c.relnamespace
            LEFT JOIN pg_stat_all_tables s ON s.relid = c.oid
            WHERE n.nspname = %s AND c.relkind IN ('r', 'p')
            ORDER BY c.relname
        """
        with contextlib.closing(connect(self.dsn)) as conn, conn.cursor() as cur:
            cur.execute(query, (self.schema,))
            rows = cur.fetchall()
        if not rows:
            raise InputDataError(
                f"PostgreSQL schema '{self.schema}' ({_target_text(self.dsn)}) holds no tables "
                "(check config parameter 'source/postgres/schema')"
            )
        text = "\n".join(" ".join(str(v) for v in row) for row in rows)
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()

    # -- catalogue -------------------------------------------------------------------------

    def _label(self, spec: tables.TableSpec) -> str:
        return f"PostgreSQL table {self.schema}.{spec.name} ({_target_text(self.dsn)})"

    def _table_columns(
        self, conn: psycopg2.extensions.connection, spec: tables.TableSpec
    ) -> tuple[str, dict[str, str]]:
        """Return (actual table name, {lower-case column: actual column}); raise if absent."""
        relname, columns, _ = self._catalogue(conn, spec)
        return relname, columns

    def _catalogue(
        self, conn: psycopg2.extensions.connection, spec: tables.TableSpec
    ) -> tuple[str, dict[str, str], dict[str, str]]:
        """(actual table name, {lower-case column: actual column}, {lower-case column: its
        type as ``format_type`` spells it, a domain's base type}); ``InputDataError`` naming
        the table when it is absent, or the first column of ``spec`` it lacks."""
        with conn.cursor() as cur:
            self._require_schema(cur, self._label(spec))
            cur.execute(
                """
                SELECT c.relname, a.attname,
                       format_type(CASE WHEN t.typtype = 'd' THEN t.typbasetype
                                        ELSE a.atttypid END, NULL)
                FROM pg_class c
                JOIN pg_namespace n ON n.oid = c.relnamespace
                JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
                JOIN pg_type t ON t.oid = a.atttypid
                WHERE n.nspname = %s AND lower(c.relname) = %s
                  AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
                ORDER BY c.relname = %s DESC, c.relname, a.attnum
                """,
                (self.schema, spec.name, spec.name),
            )
            rows = cur.fetchall()
        if not rows:
            raise InputDataError(
                f"{self._label(spec)}: the table does not exist "
                "(expected a MIMIC-III build made with MIT-LCP/mimic-code)"
            )
        relname = rows[0][0]
        columns = {att.lower(): att for rel, att, _ in rows if rel == relname}
        types = {att.lower(): type_ for rel, att, type_ in rows if rel == relname}
        for col in spec.columns:
            if col.required and col.name not in columns:
                raise InputDataError(
                    f"{self._label(spec)}: missing column '{col.name}'; the table has: "
                    f"{', '.join(sorted(columns))}"
                )
        return relname, columns, types

    def check_table(self, spec: tables.TableSpec, sample_rows: int = 0) -> None:
        """Refuse, before any job reads it, a table without a column ``spec`` reads or with
        a column of a type that does not hold ``spec``'s values (:data:`COLUMN_TYPES`).

        The types come from the catalogue: no row is read (``sample_rows`` is for sources
        without declared types). Raises ``InputDataError`` naming the table, the column, its
        type and the types expected; ``SourceConnectionError`` when the server cannot be
        reached.
        """
        with contextlib.closing(connect(self.dsn)) as conn:
            _, _, types = self._catalogue(conn, spec)
        for col in spec.columns:
            if col.name not in types:
                continue  # an optional column the table lacks: read as nulls
            words, accepted = column_types(col.type)
            if types[col.name] not in accepted:
                raise InputDataError(
                    f"{self._label(spec)}: column '{col.name}' has type {types[col.name]}; "
                    f"expected {words} ({', '.join(accepted)})"
                )

    def _select(
        self, relname: str, columns: dict[str, str], spec: tables.TableSpec
    ) -> tuple[sql.Composed, list[str]]:
        """``SELECT <spec columns present> FROM schema.table`` and the output column names."""
        items, names = [], []
        for col in spec.columns:
            if col.name not in columns:
                continue
            ident = sql.Identifier(columns[col.name])
            expr = sql.SQL("{}::timestamp") if col.name in spec.timestamp_columns else sql.SQL("{}")
            items.append(sql.SQL("{} AS {}").format(expr.format(ident), sql.Identifier(col.name)))
            names.append(col.name)
        query = sql.SQL("SELECT {} FROM {}").format(
            sql.SQL(", ").join(items), sql.Identifier(self.schema, relname)
        )
        return query, names

    # -- streaming -------------------------------------------------------------------------

    def _batches(
        self,
        spec: tables.TableSpec,
        chunk_rows: int | None,
        itemids: list[int] | None = None,
    ) -> Iterator[Any]:
        """Yield typed batches (``spec.schema``) of the table, optionally filtered by itemid."""
        conn = connect(self.dsn)
        label = self._label(spec)
        try:
            relname, columns = self._table_columns(conn, spec)
            select, names = self._select(relname, columns, spec)
            if itemids is not None:
                # ARRAY[...] literal adapted by psycopg2 from Python ints (no string formatting,
                # and no %-placeholders that a '%' in a schema name could confuse)
                select = sql.SQL("{} WHERE {} = ANY({}::integer[])").format(
                    select,
                    sql.Identifier(columns["itemid"]),
                    sql.Literal([int(i) for i in itemids]),
                )
            query = sql.SQL("COPY ({}) TO STDOUT WITH (FORMAT csv, HEADER true)").format(select)
            query = query.as_string(conn)
            log.info(
                f"{spec.file_stem}: COPY from {self.schema}.{relname} ({_target_text(self.dsn)})"
            )
            rows = chunk_rows or (MAX_BLOCK_BYTES // ROW_BYTES)
            block = min(max(rows * ROW_BYTES, MIN_BLOCK_BYTES), MAX_BLOCK_BYTES)
            yield from self._parse_copy(conn, query, label, names, spec, block)
        finally:
            conn.close()

    def _parse_copy(
        self,
        conn: psycopg2.extensions.connection,
        query: str,
        label: str,
        names: list[str],
        spec: tables.TableSpec,
        block: int,
    ) -> Iterator[Any]:
        pump = CopyPump(conn, query)
        completed = False
        try:
            yield from parse_csv_stream(
                pump.reader,
                label=label,
                parser_names=names,
                shown={n: n for n in names},
                spec=spec,
                block_size=block,
                newlines_in_values=True,
            )
            completed = True
        except InputDataError:
            error = pump.close()
            if error is not None:  # the parse failed because the COPY did
                raise self._copy_error(error, label) from None
            raise
        finally:
            error = pump.close()
        if completed and error is not None:
            raise self._copy_error(error, label)

    def _copy_error(self, exc: BaseException, label: str) -> Exception:
        if isinstance(exc, psycopg2.OperationalError | psycopg2.InterfaceError):
            reason = _scrub(" ".join(str(exc).split()), self.dsn)
            return SourceConnectionError(f"{label}: connection lost during COPY: {reason}")
        if isinstance(exc, psycopg2.Error):
            return InputDataError(
                f"{label}: the COPY query failed: {_server_reason(exc, self.dsn)}"
            )
        return exc if isinstance(exc, Exception) else RuntimeError(repr(exc))

    def _events(
        self, spec: tables.TableSpec, itemids: Any, chunk_rows: int, stats: dict | None
    ) -> Iterator[Any]:
        # The database does the itemid filtering (partition pruning): rows are not counted.
        ids = itemids.to_pylist()
        if stats is not None:
            stats.update(rows_read=None, dropped_other_itemid=None, itemid_filter="database")
        if not ids:
            return
        for batch in self._batches(spec, chunk_rows, ids):
            if batch.num_rows:
                yield batch
