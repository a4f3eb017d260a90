"""The ``paimon`` PySpark data source: ``spark.read/write.format("paimon")``.

This class only wires Spark's entry points to the modules that do the work:
``reader.py`` (batch read), ``writer.py`` + ``write_setup.py`` (batch write), and,
imported lazily so that batch use never depends on them, ``streaming_reader.py``
and ``streaming_writer.py`` (``readStream`` / ``writeStream``). Options are parsed
once by ``options.parse_options``; see docs/datasource.md for the full list.

Every new Python worker of a Spark task imports this module to find the class (Spark
starts one per kind of work: looking the source up, creating it, planning, writing,
committing), and each pays its imports. The modules that open a table (pypaimon's
catalog, which imports pandas and pyarrow.dataset: ~2.7 s of CPU) are imported by the
methods that open one, so the workers that only look the class up stay light.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceWriter
from pyspark.sql.types import StructType

from airflow_provider_paimon.lineage.meta_options import has_lineage_proposal_options
from airflow_provider_paimon.paimon.errors import InvalidArgumentError

from ..branch.redirect import apply
from ..connect_carry import CarriedOnConnect
from ..lineage.direct import check_session
from ..options import PaimonOptions, parse_options
from .partition_pruning import check_partition_filter


class PaimonDataSource(CarriedOnConnect, DataSource):
    """Apache Paimon tables for Spark, through pypaimon (no JVM jars needed)."""

    #: the session's ``spark.paimon.branch.*`` entries when it was registered; set on
    #: the subclass ``registration.register_data_source`` registers
    branch_redirects: dict[str, str] = {}  # noqa: RUF012 - read only
    #: the session's lineage job name and spool folder (``lineage_direct.session_info``)
    lineage_session: dict[str, str] = {}  # noqa: RUF012 - read only
    #: snapshot properties of every commit (the Airflow run and Spark app id, see
    #: ``paimon.commit_properties``), taken on the driver when it was registered
    commit_properties: dict[str, str] = {}  # noqa: RUF012 - read only
    #: lineage options every read and write takes as defaults: a Spark Connect
    #: session's capture (``lineage.connect_capture``); may hold the store's password,
    #: so it travels only inside the pickled class, never in options or logs
    lineage_defaults: dict[str, str] = {}  # noqa: RUF012 - read only
    #: a Spark Connect session capture's OpenLineage settings, for the events each commit
    #: sends (``lineage.connect_openlineage``); may hold an API key, travels like the above
    openlineage_session: dict[str, Any] = {}  # noqa: RUF012 - read only
    #: a classic session's capture: its event log, what it records and its store check
    #: file (``lineage.routing_state``; paths and a descriptor, no secret)
    capture_routing: dict[str, str] = {}  # noqa: RUF012 - read only
    #: ``carry_package`` (``CarriedOnConnect``) is set on the class registered on a Spark
    #: Connect session: streaming runners there do not get the session's artifacts

    @classmethod
    def name(cls) -> str:
        return "paimon"

    @property
    def paimon_options(self) -> PaimonOptions:
        return self._options("reading")

    def _options(self, what: str) -> PaimonOptions:
        """The options, with the session's branch redirect resolved (``spark.branch.redirect``)."""
        import dataclasses

        given = dict(self.options)
        if self.lineage_defaults and not _asks_lineage(given):
            given = {**self.lineage_defaults, **given}
        opts = dataclasses.replace(
            apply(parse_options(given), self.branch_redirects, what=what),
            lineage_session=dict(self.lineage_session),
            openlineage=dict(self.openlineage_session),
            capture_routing=dict(self.capture_routing),
        )
        check_session(opts)  # options and the session's capture must agree
        return opts

    def schema(self) -> StructType:
        """The table's schema (at the time-travel snapshot), or the ``columns`` subset;
        with ``read.changelog`` (a primary-key stream) ``rowkind`` first."""
        from .changelog_read import ROWKIND, changelog_schema, read_changelog

        opts = self.paimon_options
        from ..tables import open_table  # heavy: see the module docstring
        from .types import table_spark_schema

        table = open_table(opts)
        full = table_spark_schema(table)
        changes = read_changelog(opts.raw) and table.is_primary_key_table
        if changes:
            full = changelog_schema(table, full, opts.table)
        if not opts.columns:
            return full
        columns = [ROWKIND, *(c for c in opts.columns if c != ROWKIND)] if changes else opts.columns
        return select_columns(full, columns, opts.table)

    def reader(self, schema: StructType) -> DataSourceReader:
        from .reader import PaimonReader

        opts = self.paimon_options
        from .changelog_read import READ_CHANGELOG, read_changelog

        if read_changelog(opts.raw):
            raise InvalidArgumentError(
                f"option {READ_CHANGELOG!r} is for streaming reads (spark.readStream): a batch "
                "read gives the table's rows as they are; drop the option"
            )
        from ..tables import batch_read_options, open_table  # heavy: see the module docstring
        from .types import check_read_schema, table_spark_schema

        opts = batch_read_options(opts)  # scan.mode: compacted-full pins its snapshot now
        table = open_table(opts)
        check_read_schema(schema, table_spark_schema(table), opts.table)
        if opts.partition_filter:
            check_partition_filter(table, opts.partition_filter, opts.table)
        return PaimonReader(opts, schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from .write_setup import plan_write
        from .writer import PaimonWriter

        opts = _batch_read_options_refused(self._options("writing"), "a write")
        return PaimonWriter(plan_write(opts, schema, overwrite, snapshot_properties=self.commit_properties))

    def streamReader(self, schema: StructType) -> Any:  # noqa: N802 - Spark's name
        from . import streaming_reader  # written separately; imported only for streams

        opts = _batch_read_options_refused(self.paimon_options, "a streaming read")
        reader = streaming_reader.create_stream_reader(opts, schema)
        reader.carry_package = self.carry_package  # Connect: micro-batch tasks lack artifacts
        return reader

    def streamWriter(self, schema: StructType, overwrite: bool) -> Any:  # noqa: N802
        from . import streaming_writer  # written separately; imported only for streams

        opts = _batch_read_options_refused(self._options("writing"), "a streaming write")
        writer = streaming_writer.create_stream_writer(
            opts, schema, overwrite, snapshot_properties=self.commit_properties
        )
        writer.carry_package = self.carry_package  # Connect: micro-batch tasks lack artifacts
        return writer


def _asks_lineage(options: dict[str, str]) -> bool:
    """Whether a read's or write's own options say something about lineage (they win)."""
    return has_lineage_proposal_options(options)


def _batch_read_options_refused(opts: PaimonOptions, what: str) -> PaimonOptions:
    """``partition-filter`` narrows batch reads only; elsewhere it would be silently ignored."""
    if opts.partition_filter:
        raise InvalidArgumentError(
            f"option 'partition-filter' applies to batch reads only, not to {what}; remove it"
        )
    return opts


def select_columns(full: StructType, columns: list[str], table: str) -> StructType:
    """The fields of ``full`` named in ``columns``, in that order."""
    by_name = {f.name: f for f in full.fields}
    unknown = [c for c in columns if c not in by_name]
    if unknown:
        raise InvalidArgumentError(
            f"option 'columns' names {', '.join(unknown)}, not in table {table} "
            f"(columns: {', '.join(full.fieldNames())})"
        )
    return StructType([by_name[c] for c in columns])
