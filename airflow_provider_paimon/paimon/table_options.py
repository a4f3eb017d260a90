"""Which options are a Paimon table's own: the only ones ever stored in a table's schema.

A table's options live in its schema files (``schema/schema-N``), which every reader of
the warehouse can read. Options reach a write from several places (the write's own
``.option()`` calls, the ``paimon`` connection's options in the job's private
environment, the catalog's settings), and most of them are not table options at all:
catalog and file-system settings, REST headers, credentials. Before this allowlist,
every option without a known catalog prefix was a "table option", so a job that
created a table stored ``header.authorization``, ``oauth.passphrase`` and
``rest.client.pwd`` in ``schema-0``.

An option is a **table option** when its key is

* a key of pypaimon's ``CoreOptions`` (read from the installed pypaimon, so a newer
  pypaimon's keys count at once);
* a key of Paimon Java's ``CoreOptions`` (``JAVA_CORE_OPTION_KEYS`` below, with their
  deprecated fallback names): tables written here are read by Paimon Java too;
* under a documented prefix (``TABLE_OPTION_PREFIXES``): per-field options
  (``fields.<column>.aggregate-function``...), file indexes
  (``file-index.bloom-filter.columns``...), callback parameters
  (``commit.callback.<n>.param``), blob descriptor file IO (``blob-descriptor.*``) and
  file-format options (``parquet.*``, ``orc.*``..., which Paimon Java hands to the
  format);
* one of this package's own table options (``PACKAGE_TABLE_OPTION_KEYS``).

Catalog keys (pypaimon's catalog, file IO and REST settings, ``CATALOG_OPTION_PREFIXES``)
are the catalog's. Anything else is **unknown**: never stored, never applied to a table.

A table option is still refused from a schema when it looks like a credential
(``refuse_secrets``): its value is a registered secret or holds one (a URL with user
info, ``token=...``), or, under a prefix that carries third-party settings
(``blob-descriptor.fs.oss.accessKeySecret``, ``parquet.crypto...key``), its key names a
credential. The refusal names the key, never the value.

Where the Java keys come from: ``paimon-api/src/main/java/org/apache/paimon/CoreOptions.java``
of apache/paimon at commit 5dacde516bf6e29b583aff8b32bab321bfc6e64f (2026-08-22): every
``key("...")`` (332), the two built from constants (``fields.default-aggregate-function``,
``blob-descriptor.source-table``), and every ``withFallbackKeys``/``withDeprecatedKeys``
name (14). The documented prefixes are from Paimon's docs (``docs/docs/concepts/spec/
fileindex.mdx``, ``CoreOptions.FIELDS_PREFIX``/``BLOB_DESCRIPTOR_PREFIX``, the
``commit.callback.#.param`` keys) and ``FileFormat.getIdentifierPrefixOptions`` for the
format identifiers of Paimon's ``FileFormatFactory`` implementations.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from . import secrets
from .errors import InvalidArgumentError

__all__ = [
    "CATALOG_OPTION_PREFIXES",
    "JAVA_CORE_OPTION_KEYS",
    "PACKAGE_TABLE_OPTION_KEYS",
    "TABLE_OPTION_PREFIXES",
    "OptionSplit",
    "canonical_table_key",
    "catalog_option_keys",
    "is_catalog_option",
    "is_table_option",
    "not_table_message",
    "not_table_options",
    "pypaimon_table_option_keys",
    "refuse_secrets",
    "secret_looking",
    "secret_message",
    "split_options",
]

#: Paimon Java's ``CoreOptions`` keys (see the module docstring for the source).
JAVA_CORE_OPTION_KEYS = frozenset({
    "add-column-before-partition", "aggregation.remove-record-on-delete",
    "alter-column-null-to-not-null.disabled", "async-file-write", "auto-create",
    "batch-scan-mode", "blob-as-descriptor", "blob-compaction.enabled",
    "blob-descriptor-field", "blob-descriptor.source-table", "blob-field",
    "blob-view-field", "blob-view.resolve.enabled", "blob-write-null-on-fetch-failure",
    "blob-write-null-on-missing-file", "blob.copy-buffer-size", "blob.split-by-file-size",
    "blob.target-file-size", "branch", "bucket", "bucket-append-ordered",
    "bucket-function.type", "bucket-key", "cache-page-size",
    "chain-table.chain-partition-keys", "chain-table.enabled",
    "chain-table.split.key-range-enabled", "chain-table.streaming.merge-snapshot",
    "changelog-file.compression", "changelog-file.format", "changelog-file.prefix",
    "changelog-file.stats-mode", "changelog-producer", "changelog-producer.row-deduplicate",
    "changelog-producer.row-deduplicate-ignore-fields", "changelog.num-retained.max",
    "changelog.num-retained.min", "changelog.time-retained", "clustering.columns",
    "clustering.history-partition.idle-to-full-sort", "clustering.history-partition.limit",
    "clustering.incremental", "clustering.incremental.mode",
    "clustering.incremental.optimize-write", "clustering.strategy",
    "commit.callback.#.param", "commit.callbacks", "commit.discard-duplicate-files",
    "commit.force-compact", "commit.force-create-snapshot", "commit.max-retries",
    "commit.max-retry-wait", "commit.min-retry-wait",
    "commit.strict-mode.last-safe-snapshot", "commit.timeout", "commit.user-prefix",
    "compaction.delete-ratio-threshold", "compaction.file-num-limit",
    "compaction.force-rewrite-all-files", "compaction.force-up-level-0",
    "compaction.incremental-size-threshold", "compaction.max-size-amplification-percent",
    "compaction.min.file-num", "compaction.offpeak-ratio", "compaction.offpeak.end.hour",
    "compaction.offpeak.start.hour", "compaction.optimization-interval",
    "compaction.size-ratio", "compaction.skip-expired-partitions",
    "compaction.small-file-ratio", "compaction.total-size-threshold", "consumer-id",
    "consumer.changelog-only", "consumer.expiration-time", "consumer.ignore-progress",
    "consumer.mode", "continuous.discovery-interval",
    "cross-partition-upsert.bootstrap-parallelism", "cross-partition-upsert.index-ttl",
    "data-evolution.compaction.rewrite-row-ids", "data-evolution.enabled",
    "data-evolution.merge-into.file-pruning", "data-evolution.merge-into.source-persist",
    "data-evolution.reassign.skip-contiguous-row-count",
    "data-evolution.row-id-conflict-rewrite.max-size", "data-evolution.row-sidecar.enabled",
    "data-evolution.row-sidecar.max-selected-rows",
    "data-evolution.row-sidecar.max-selection-ratio", "data-file.external-paths",
    "data-file.external-paths.specific-fs", "data-file.external-paths.strategy",
    "data-file.external-paths.weights", "data-file.path-directory", "data-file.prefix",
    "data-file.thin-mode", "delete.force-produce-changelog",
    "deletion-vector.index-file.target-size", "deletion-vectors.bitmap64",
    "deletion-vectors.enabled", "deletion-vectors.merge-on-read",
    "deletion-vectors.modifiable", "disable-explicit-type-casting",
    "dynamic-bucket.assigner-parallelism", "dynamic-bucket.initial-buckets",
    "dynamic-bucket.max-buckets", "dynamic-bucket.target-row-num",
    "dynamic-partition-overwrite", "end-input.check-partition-expire",
    "fields.default-aggregate-function", "file-index.in-manifest-threshold",
    "file-index.read.enabled", "file-operation.thread-num", "file-reader-async-threshold",
    "file.block-size", "file.compression", "file.compression.per.level",
    "file.compression.zstd-level", "file.format", "file.format.per.level",
    "file.suffix.include.compression", "force-lookup", "format-table.commit-hive-sync-url",
    "format-table.file.compression", "format-table.implementation",
    "format-table.partition-path-only-value", "format-table.scan.list-parallelism",
    "full-compaction.delta-commits", "full-text-index.search-mode",
    "global-index.build.max-parallelism", "global-index.build.max-shard",
    "global-index.column-update-action", "global-index.enabled",
    "global-index.external-path", "global-index.row-count-per-shard",
    "global-index.search-mode", "global-index.thread-num", "ignore-delete",
    "ignore-update-before", "incremental-between", "incremental-between-scan-mode",
    "incremental-between-tag-to-snapshot", "incremental-between-timestamp",
    "incremental-to-auto-tag", "index-file-in-data-file-dir",
    "key-value.sequence_number.enabled", "local-kv-db.block-size",
    "local-merge-buffer-size", "local-sort.max-num-file-handles", "lookup-compact",
    "lookup-compact.max-interval", "lookup-wait", "lookup.blob-as-descriptor",
    "lookup.cache-file-retention", "lookup.cache-max-disk-size",
    "lookup.cache-max-memory-size", "lookup.cache-rows", "lookup.cache-spill-compression",
    "lookup.cache.bloom.filter.enabled", "lookup.cache.bloom.filter.fpp",
    "lookup.cache.high-priority-pool-ratio", "lookup.continuous.discovery-interval",
    "lookup.hash-load-factor", "lookup.merge-buffer-size", "lookup.merge-records-threshold",
    "lookup.remote-file.enabled", "lookup.remote-file.level-threshold",
    "manifest-sort.enabled", "manifest-sort.max-rewrite-size",
    "manifest-sort.partition-field", "manifest.compression",
    "manifest.delete-file-drop-stats", "manifest.full-compaction-threshold-size",
    "manifest.merge-min-count", "manifest.merge-optimize.enabled",
    "manifest.target-file-size", "materialized-table.definition-query",
    "materialized-table.interval-freshness",
    "materialized-table.interval-freshness.time-unit",
    "materialized-table.logical-refresh-mode", "materialized-table.refresh-handler-bytes",
    "materialized-table.refresh-handler-description", "materialized-table.refresh-mode",
    "materialized-table.refresh-status", "merge-engine", "metadata.stats-dense-store",
    "metadata.stats-keep-first-n-columns", "metadata.stats-mode",
    "metadata.stats-mode.per.level", "metastore.partitioned-table",
    "metastore.tag-to-partition", "metastore.tag-to-partition.preview", "num-levels",
    "num-sorted-run.compaction-trigger", "num-sorted-run.stop-trigger", "overwrite-upgrade",
    "page-size", "parquet.enable.dictionary", "partial-update.remove-record-on-delete",
    "partial-update.remove-record-on-sequence-group", "partition", "partition.default-name",
    "partition.end-input-to-done", "partition.expiration-batch-size",
    "partition.expiration-check-interval", "partition.expiration-max-num",
    "partition.expiration-strategy", "partition.expiration-time",
    "partition.idle-time-to-report-statistic", "partition.legacy-name",
    "partition.mark-done-action", "partition.mark-done-action.custom.class",
    "partition.mark-done-action.http.params", "partition.mark-done-action.http.url",
    "partition.sink-strategy", "partition.timestamp-format.strict",
    "partition.timestamp-formatter", "partition.timestamp-pattern", "path",
    "pk-bitmap.index.columns", "pk-btree.index.columns", "pk-clustering-override",
    "pk-full-text.index.columns", "pk-multivalue.index.columns", "pk-vector.index.columns",
    "postpone.batch-write-fixed-bucket",
    "postpone.batch-write-fixed-bucket.max-parallelism",
    "postpone.batch-write-fixed-bucket.rescale-load-factor", "postpone.default-bucket-num",
    "postpone.merge-on-read", "postpone.target-row-num-per-bucket",
    "postpone.target-size-per-bucket", "primary-key", "primary-key.nullable",
    "query-auth.enabled", "read.batch-size", "record-level.expire-time",
    "record-level.time-field", "row-tracking.enabled",
    "row-tracking.partition-group-on-commit", "rowkind.field", "scalar-index.search-mode",
    "scan.bounded.watermark", "scan.bucket", "scan.creation-time-millis",
    "scan.fallback-branch", "scan.fallback-branch.read-fail-fast",
    "scan.fallback-delta-branch", "scan.fallback-snapshot-branch",
    "scan.file-creation-time-millis", "scan.ignore-corrupt-files", "scan.ignore-lost-files",
    "scan.manifest.parallelism", "scan.max-splits-per-task", "scan.mode",
    "scan.plan-auto-tag-for-read.time-retained", "scan.plan-sort-partition",
    "scan.primary-branch", "scan.snapshot-id", "scan.tag-name", "scan.timestamp",
    "scan.timestamp-millis", "scan.version", "scan.watermark", "sequence.field",
    "sequence.field.sort-order", "sequence.snapshot-ordering", "sink.process-time-zone",
    "sink.watermark-time-zone", "snapshot.clean-empty-directories",
    "snapshot.expire.execution-mode", "snapshot.expire.limit",
    "snapshot.ignore-empty-commit", "snapshot.num-retained.max",
    "snapshot.num-retained.min", "snapshot.time-retained",
    "snapshot.watermark-idle-timeout", "sort-compaction.local-sample.magnification",
    "sort-compaction.range-strategy", "sort-engine", "sort-spill-buffer-size",
    "sort-spill-threshold", "source.split.open-file-cost", "source.split.target-size",
    "spill-compression", "spill-compression.zstd-level", "stream-scan-mode",
    "streaming-read-append-overwrite", "streaming-read-overwrite",
    "streaming.read.snapshot.delay", "table-read.sequence-number.enabled",
    "tag.automatic-completion", "tag.automatic-creation", "tag.batch.customized-name",
    "tag.callback.#.param", "tag.callbacks", "tag.create-success-file",
    "tag.creation-delay", "tag.creation-period", "tag.creation-period-duration",
    "tag.default-time-retained", "tag.num-retained-max", "tag.period-formatter",
    "tag.time-expire-enabled", "target-file-row-num", "target-file-size", "type",
    "variant.inferShreddingSchema", "variant.shredding.adaptive.maxInferBufferRow",
    "variant.shredding.adaptive.retentionRatio", "variant.shredding.inferenceMode",
    "variant.shredding.maxInferBufferRow", "variant.shredding.maxSchemaDepth",
    "variant.shredding.maxSchemaWidth", "variant.shredding.minFieldCardinalityRatio",
    "variant.shreddingSchema", "vector-field", "vector-index.search-mode",
    "vector-search.distribute.enabled", "vector-search.lateral-join.batch-size",
    "vector.file.format", "vector.target-file-size", "visibility-callback.check-interval",
    "visibility-callback.enabled", "visibility-callback.timeout", "write-buffer-for-append",
    "write-buffer-size", "write-buffer-spill.max-disk-size", "write-buffer-spillable",
    "write-max-writers-to-spill", "write-only", "write.batch-memory", "write.batch-size",
    "write.sequence-number-init-mode", "zorder.var-length-contribution"
})
#: Deprecated names Paimon Java still reads (``withFallbackKeys``/``withDeprecatedKeys``).
JAVA_FALLBACK_KEYS = frozenset({
    "blob.stored-descriptor-fields", "changelog-producer.lookup-wait",
    "deduplicate.ignore-delete", "delete-file.thread-num", "first-row.ignore-delete",
    "log.scan", "log.scan.timestamp-millis", "orc.write.batch-size",
    "parquet.variant.shreddingSchema", "partial-update.ignore-delete",
    "sink.clustering.by-columns", "sink.clustering.strategy",
    "snapshot.expire.clean-empty-directories", "write.compaction-skip"
})
#: Table options this package reads itself (from a table's options, like Paimon's):
#: ``spark.fast-append-write`` (``spark/datasource/fast_append.py``), the time bound
#: of the expiry after each commit (``paimon/maintenance/after_commit.py``) and the
#: table's branch/tag name profile (``paimon/names.py``, ``NAME_PROFILE_OPTION``).
PACKAGE_TABLE_OPTION_KEYS = frozenset(
    {"spark.fast-append-write", "snapshot.expire.execution-time-bound", "airflow-paimon.name-profile"}
)
#: Documented prefixes of table options (Paimon Java's docs and ``FileFormat``).
FIELDS_PREFIX = "fields."
FILE_INDEX_PREFIX = "file-index."
#: Prefixes whose keys carry another component's settings (file IO, a format, a
#: callback): there a key naming a credential is refused, not just a secret value.
THIRD_PARTY_PREFIXES = (
    "blob-descriptor.", "commit.callback.", "tag.callback.",
    "parquet.", "orc.", "avro.", "csv.", "json.", "text.", "lance.", "vortex.", "mosaic.", "blob.",
)
TABLE_OPTION_PREFIXES = (FIELDS_PREFIX, FILE_INDEX_PREFIX, *THIRD_PARTY_PREFIXES)

#: Options that address the catalog or its file IO rather than a table (also pypaimon's
#: catalog option keys, ``catalog_option_keys``). ``commit.atomicity`` and the commit
#: lock are the warehouse's (``storage/atomicity.py``); ``header.*`` are a REST
#: catalog's HTTP headers (its credentials, often).
CATALOG_OPTION_PREFIXES = (
    "warehouse", "metastore", "uri", "jdbc.", "token", "dlf.", "fs.", "s3.", "oss.", "hadoop.",
    "commit.atomicity", "commit.lock.", "commit.conditional-put.",
    "header.", "gcs.", "hdfs.", "security.", "fuse.", "file-io.", "user-agent.", "cache.",
)


@functools.lru_cache(maxsize=1)
def pypaimon_table_option_keys() -> frozenset[str]:
    """The keys of the installed pypaimon's ``CoreOptions``."""
    from pypaimon.common.options.config_option import ConfigOption
    from pypaimon.common.options.core_options import CoreOptions

    return frozenset(v.key() for v in vars(CoreOptions).values() if isinstance(v, ConfigOption))


@functools.lru_cache(maxsize=1)
def catalog_option_keys() -> frozenset[str]:
    """The option keys of pypaimon's catalog, file IO and security settings."""
    from pypaimon.common.options import config
    from pypaimon.common.options.config_option import ConfigOption

    keys: set[str] = set()
    for _, cls in inspect.getmembers(config, inspect.isclass):
        keys.update(v.key() for v in vars(cls).values() if isinstance(v, ConfigOption))
    return frozenset(keys)


@functools.lru_cache(maxsize=1)
def _exact_table_keys() -> dict[str, str]:
    """Every exact table option key by its lower-case form (Spark lower-cases keys)."""
    keys = pypaimon_table_option_keys() | JAVA_CORE_OPTION_KEYS | JAVA_FALLBACK_KEYS | PACKAGE_TABLE_OPTION_KEYS
    return {key.lower(): key for key in sorted(keys)}


@functools.lru_cache(maxsize=1)
def _exact_catalog_keys() -> frozenset[str]:
    return frozenset(key.lower() for key in catalog_option_keys())


def canonical_table_key(key: str) -> str:
    """``key`` as Paimon spells it (``variant.shreddingschema`` -> ``variant.shreddingSchema``)."""
    return _exact_table_keys().get(str(key).lower(), str(key))


def is_table_option(key: Any) -> bool:
    """True when ``key`` is a Paimon table option (exact key or documented prefix)."""
    lowered = str(key).strip().lower()
    if lowered in _exact_catalog_keys():
        return False
    if lowered in _exact_table_keys():
        return True
    if lowered.startswith(CATALOG_OPTION_PREFIXES):
        return False
    prefix = _prefix_of(lowered, TABLE_OPTION_PREFIXES)
    return prefix is not None and len(lowered) > len(prefix)


def _prefix_of(lowered: str, prefixes: tuple[str, ...]) -> str | None:
    return next((p for p in prefixes if lowered.startswith(p)), None)


def is_catalog_option(key: Any) -> bool:
    """True when ``key`` addresses the catalog or its file IO (never a table option)."""
    lowered = str(key).strip().lower()
    if lowered in _exact_catalog_keys():
        return True
    return lowered not in _exact_table_keys() and lowered.startswith(CATALOG_OPTION_PREFIXES)


@dataclass(frozen=True)
class OptionSplit:
    """Options split by what they are: ``table`` (Paimon's, canonical keys), ``catalog``, ``unknown``."""

    table: dict[str, str] = field(default_factory=dict)
    catalog: dict[str, str] = field(default_factory=dict, repr=False)  # may hold secrets
    unknown: dict[str, str] = field(default_factory=dict, repr=False)  # may hold secrets


def split_options(options: Mapping[str, Any]) -> OptionSplit:
    """Split ``options`` into table, catalog and unknown options (keys as given, table
    options under Paimon's spelling)."""
    split = OptionSplit()
    for key, value in options.items():
        if is_table_option(key):
            split.table[canonical_table_key(key)] = str(value)
        elif is_catalog_option(key):
            split.catalog[str(key)] = str(value)
        else:
            split.unknown[str(key)] = str(value)
    return split


def _looks_secret(key: str, value: Any) -> bool:
    """Would storing ``key=value`` in a schema store a credential?"""
    lowered = key.lower()
    prefix = _prefix_of(lowered, THIRD_PARTY_PREFIXES)
    if prefix is not None and lowered not in _exact_table_keys() and secrets.is_secret_key(key[len(prefix):]):
        return True
    return secrets.is_secret("", "" if value is None else str(value))


def secret_looking(options: Mapping[str, Any]) -> list[str]:
    """The keys of ``options`` whose entry looks like a credential (sorted)."""
    return sorted(str(k) for k, v in options.items() if _looks_secret(str(k), v))


def secret_message(keys: Iterable[str]) -> str:
    """Why options named ``keys`` are not stored (the keys only, never a value)."""
    return (
        f"option(s) {', '.join(repr(k) for k in keys)} look like credentials (a secret value, a "
        "URL with user info, or a credential setting) and a table's options are stored in its "
        "schema files for every reader of the warehouse to see; give credentials as catalog "
        "options (the paimon connection), not as table options"
    )


def not_table_options(keys: Iterable[Any]) -> list[str]:
    """The keys that are not Paimon table options (sorted, once each)."""
    return sorted({str(k) for k in keys if not is_table_option(k)})


def not_table_message(keys: Iterable[str]) -> str:
    """Why keys that are not table options are not stored."""
    return (
        f"{', '.join(repr(k) for k in keys)}: not Paimon table option(s) (catalog, connection "
        "and unknown keys are never stored in a table's schema); check the spelling against "
        "Paimon's table options, or give catalog settings to the catalog (the paimon connection)"
    )


def refuse_secrets(options: Mapping[str, Any], *, what: str) -> None:
    """Raise ``InvalidArgumentError`` naming every option of ``options`` (table options
    about to be stored in a schema) that looks like a credential; the values are never
    shown. ``what`` says what would have stored them (``creating table db.t``)."""
    bad = secret_looking(options)
    if bad:
        raise InvalidArgumentError(f"{what} refused, nothing written: {secret_message(bad)}")
