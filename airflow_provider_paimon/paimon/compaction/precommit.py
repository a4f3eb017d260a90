"""Pre-commit merging (``precommit-compact=true``): fewer, larger files per commit.

A job with short micro-batches writes a few small files per batch; committing them
as they are makes the table slow to read long before a compaction job runs. Paimon's
``precommit-compact`` option merges the small new files of one commit before the
commit. Here the Spark writer calls ``merge_commit_messages`` on the driver, between
collecting its tasks' commit messages and committing them: the small new files of
each partition/bucket are rewritten into target-size files, the small ones deleted,
and the writer commits a normal APPEND snapshot with the merged files.

Only messages that just add files are merged; anything carrying deletes, index or
changelog files, or compact increments is passed through untouched, as are
primary-key and row-tracking tables (their files are not plain appends).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from pypaimon.write.commit_message import CommitMessage

from ..option_values import bool_option
from .options import CompactionOptions
from .plan import check_compactable
from .rewrite import FILE_SOURCE_APPEND, delete_files, rewrite_files
from .scan import table_name

log = logging.getLogger(__name__)

PRECOMMIT_COMPACT = "precommit-compact"


def precommit_enabled(options: Mapping[str, Any] | None) -> bool:
    """Whether write options ask for pre-commit merging (``precommit-compact=true``)."""
    return bool_option(options or {}, PRECOMMIT_COMPACT, False)


def merge_commit_messages(
    table: Any, messages: list[CommitMessage], options: Mapping[str, Any] | None = None
) -> list[CommitMessage]:
    """Return messages equivalent to ``messages`` with small new files merged.

    ``options`` are the write options (table options may be overridden there, e.g.
    ``target-file-size``). A file counts as small as for compaction (below
    ``target-file-size x compaction.small-file-ratio``); a partition/bucket with at
    least two small files gets them merged. On failure the merged files written so
    far are deleted and the original messages' files are left as they were.
    """
    if not messages:
        return messages
    try:
        check_compactable(table)
    except Exception as err:  # noqa: BLE001 - not mergeable: commit as written
        log.info("precommit-compact skipped for %s: %s", table_name(table), err)
        return messages
    opts = CompactionOptions.from_table(table, options)

    passthrough: list[CommitMessage] = []
    groups: dict[tuple, list[CommitMessage]] = {}
    for msg in messages:
        if _plain_append(msg):
            groups.setdefault((tuple(msg.partition), msg.bucket), []).append(msg)
        else:
            passthrough.append(msg)

    out: list[CommitMessage] = list(passthrough)
    written: list[tuple[tuple, int, list[Any]]] = []
    replaced: list[tuple[tuple, int, list[Any]]] = []
    try:
        for (partition, bucket), msgs in groups.items():
            files = [f for m in msgs for f in m.new_files]
            small = [f for f in files if f.file_size < opts.compaction_file_size]
            if len(small) < 2:
                out.extend(msgs)
                continue
            keep = [f for f in files if f.file_size >= opts.compaction_file_size]
            merged = rewrite_files(
                table, partition, bucket, small, opts.target_file_size, FILE_SOURCE_APPEND
            )
            written.append((partition, bucket, merged))
            replaced.append((partition, bucket, small))
            out.append(
                CommitMessage(
                    partition=partition,
                    bucket=bucket,
                    new_files=keep + merged,
                    check_from_snapshot=msgs[0].check_from_snapshot,
                    total_buckets=msgs[0].total_buckets,
                )
            )
    except BaseException:
        for partition, bucket, files in written:
            delete_files(table, partition, bucket, files)
        raise
    for partition, bucket, files in replaced:
        delete_files(table, partition, bucket, files)
    if replaced:
        log.info(
            "precommit-compact merged %d small files into %d for %s",
            sum(len(f) for _, _, f in replaced), sum(len(f) for _, _, f in written),
            table_name(table),
        )
    return out


def _plain_append(msg: CommitMessage) -> bool:
    return bool(msg.new_files) and not (
        msg.deleted_files or msg.index_adds or msg.index_deletes or msg.changelog_files
        or msg.compact_before or msg.compact_after or msg.compact_changelog_files
        or msg.compact_index_adds or msg.compact_index_deletes
    )
