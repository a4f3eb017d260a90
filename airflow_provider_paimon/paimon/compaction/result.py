"""What a compaction run returns, and the two steps after its commit that both the
append runner (``runner``) and the primary-key runner (``lsm.compact``) take: the
snapshot expiry Paimon Java's compaction jobs run, and the sweep of a failed attempt's
files."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..fileops import local_path
from ..maintenance.after_commit import expire_after_commit
from .plan import CompactionBin
from .scan import resolve_path


@dataclass
class CompactionResult:
    """Summary of a run, as the job prints it and the operator pushes to XCom."""

    files_before: int = 0
    bytes_before: int = 0
    files_after: int = 0
    bytes_after: int = 0
    snapshot_id: int | None = None
    committed: bool = False
    duration_s: float = 0.0
    bins: int = 0
    attempts: int = 0
    message: str = ""
    dry_run: bool = False
    plan: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "files_before": self.files_before,
            "bytes_before": self.bytes_before,
            "files_after": self.files_after,
            "bytes_after": self.bytes_after,
            "snapshot_id": self.snapshot_id,
            "committed": self.committed,
            "duration_s": round(self.duration_s, 3),
            "bins": self.bins,
            "attempts": self.attempts,
            "message": self.message,
            "dry_run": self.dry_run,
        }
        if self.plan is not None:
            out["plan"] = self.plan
        out.update(self.extra)
        return out


def expire_after_compaction(table: Any, branch: str | None, run_options: Mapping[str, Any] | None,
            result: CompactionResult) -> dict[str, Any] | None:
    """Expire after the COMPACT commit, as Paimon Java's compaction jobs do.

    Returns ``expire_after_commit``'s result without its file list (the XCom stays
    small; the counts and ids say what went), or ``None`` when nothing was expired.
    """
    expired = expire_after_commit(table, branch=branch, options=run_options)
    if not expired or not expired.get("expired_snapshot_ids"):
        return None
    ids = expired["expired_snapshot_ids"]
    result.message += f"; expired snapshots {ids[0]}-{ids[-1]}"
    return {k: v for k, v in expired.items() if k != "deleted_files"}


def delete_attempt_files(table: Any, bins: list[CompactionBin], prefix: str | tuple[str, ...],
                         keep: set[str]) -> None:
    """Delete files named ``prefix*`` (any of the prefixes) in the bins' bucket folders,
    except ``keep``: one listing of each folder."""
    prefixes = (prefix,) if isinstance(prefix, str) else tuple(prefix)
    delete_prefixed_files(table.file_io, bin_folders(table, bins), prefixes, keep)


def delete_prefixed_files(file_io: Any, folders: Iterable[str], prefixes: tuple[str, ...], keep: set[str]) -> int:
    """Delete the files named ``prefixes*`` in ``folders`` except ``keep`` (best effort: a
    folder that cannot be listed is skipped); return how many were deleted."""
    deleted = 0
    for folder in folders:
        try:
            names = folder_names(file_io, folder)
        except Exception:  # noqa: BLE001 - best effort cleanup, the folder may be gone
            continue
        for name in names:
            if name.startswith(prefixes) and name not in keep:
                file_io.delete_quietly(f"{folder}/{name}")
                deleted += 1
    return deleted


def folder_names(file_io: Any, folder: str) -> list[str]:
    """The names in a bucket folder (empty when it does not exist).

    Local folders are listed with ``os.listdir``: pypaimon's local ``list_status`` stats
    every file of the folder, which was a third of a small compaction's time; other
    file systems return names with the listing anyway.
    """
    path = local_path(folder)
    if path is not None:
        try:
            return os.listdir(path)
        except FileNotFoundError:
            return []
    return [base_name(status) for status in file_io.list_status(folder)]


def bin_folders(table: Any, bins: list[CompactionBin]) -> list[str]:
    """The bucket folders the bins' files live in (sorted)."""
    out = set()
    for b in bins:
        f = b.files[0]
        resolve_path(table, b.partition, b.bucket, f)
        path = f.physical_path()
        if path and "/" in path:
            out.add(path.rsplit("/", 1)[0])
    return sorted(out)


def base_name(status: Any) -> str:
    for attr in ("base_name", "path", "name"):
        value = getattr(status, attr, None)
        if value:
            return str(value).rstrip("/").rsplit("/", 1)[-1]
    return str(status).rstrip("/").rsplit("/", 1)[-1]
