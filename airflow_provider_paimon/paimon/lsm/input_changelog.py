"""``changelog-producer=input`` as Paimon Java writes it: the raw rows of each flush.

Paimon Java's ``MergeTreeWriter`` flushes its write buffer through
``SortBufferWriteBuffer.forEach``: every buffered row, sorted by key and sequence
number, goes to the changelog file, and the rows merged per key go to the data file.
pypaimon 2.1's key-value writer writes the merged rows to both, so a key's ``-U``
before its ``+U`` in one write (or any version but the last) never reaches a streaming
reader. ``RawChangelogWriter`` is pypaimon's writer with Java's flush: the data file
as pypaimon writes it, then one changelog file holding the flush's rows unmerged
(same sequence numbers, row kinds in ``_VALUE_KIND``), named with the write's changelog
prefix so a failed write's sweep finds it.
"""

from __future__ import annotations

from typing import Any

from pypaimon.common.options.core_options import ChangelogProducer
from pypaimon.write.writer.key_value_data_writer import KeyValueDataWriter

from ..compaction.rewrite import FILE_SOURCE_APPEND
from .changelog import changelog_prefix
from .rewrite import KvFileWriter


class RawChangelogWriter(KeyValueDataWriter):
    """pypaimon's key-value writer that also writes each flush's raw rows as a changelog file."""

    _changelog_prefix: str = "changelog-"

    @classmethod
    def adopt(cls, writer: Any, prefix: str) -> Any:
        """``writer`` (a plain pypaimon key-value writer) turned into this class; others as they are."""
        if type(writer) is not KeyValueDataWriter:
            return writer
        writer.__class__ = cls
        writer._changelog_prefix = prefix
        return writer

    def _flush_all(self) -> None:
        pending = self._buffer.materialize()
        raw = self._sort_by_primary_key(pending) if pending is not None and pending.num_rows else None
        super()._flush_all()
        if raw is not None:
            self._write_changelog(raw)

    def _write_changelog(self, rows: Any) -> None:
        table = self.table.copy({"data-file.prefix": self._changelog_prefix})
        writer = KvFileWriter(table, self.partition, self.bucket, 0, file_source=FILE_SOURCE_APPEND)
        writer.write_file(rows)
        self.committed_changelog_files.extend(writer.committed_files)


def use_input_changelog(table_write: Any, data_prefix: str | None) -> Any:
    """Make pypaimon ``table_write`` store the raw input as changelog (``changelog-producer=input``).

    A no-op unless the table is a primary-key table with the ``input`` producer and the
    write publishes changelog (an overwrite does not, as in Java). Returns ``table_write``.
    """
    store_write = getattr(table_write, "file_store_write", None)
    if store_write is None or store_write.changelog_producer != ChangelogProducer.INPUT:
        return table_write
    if not store_write.table.is_primary_key_table:
        return table_write
    prefix = changelog_prefix(data_prefix)
    store_write.changelog_producer = ChangelogProducer.NONE  # pypaimon's merged changelog: off
    create = store_write._create_data_writer

    def create_writer(partition: tuple, bucket: int, options: Any) -> Any:
        writer = create(partition, bucket, options)
        return RawChangelogWriter.adopt(writer, prefix)

    store_write._create_data_writer = create_writer
    return table_write
