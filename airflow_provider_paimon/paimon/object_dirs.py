"""Move a folder where folders are not real: object stores (S3, OSS, GCS).

Branch create, rename and delete move a whole branch folder. On a local file system
that is one ``rename``; on an object store there are no directories, only keys with a
common prefix, and pypaimon's ``FileIO.rename`` of a prefix fails (pyarrow's S3 file
system moves single objects only). Here a folder is moved the way Paimon Java's
object-store file IOs do it: copy every object (server-side copy, no download), then
delete the originals, including the empty ``folder/`` marker objects pyarrow's S3
file system writes (a marker left behind keeps a moved branch listed).

That is not one atomic step, so the order is chosen for readers: objects are copied
with the snapshot files and ``LATEST``/``EARLIEST`` hints last (a reader of the new
folder sees a snapshot only once its schema, tags and manifests are there), and the
originals are deleted with snapshots and hints first (a reader of the old folder stops
seeing snapshots before their schema goes). A move killed half-way leaves both prefixes
partly filled; docs/storage.md says what that means for each branch operation.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from typing import Any

from . import fileops


def _rank(rel: str) -> int:
    """Copy order, lower first: snapshot files and hints go last; deletes run the reverse."""
    if rel.startswith("snapshot/"):
        return 2 if rel.rsplit("/", 1)[-1] in ("LATEST", "EARLIEST") else 1
    return 0


def _filesystem(file_io: Any) -> Any:
    fs = getattr(file_io, "filesystem", None)
    if fs is None or not hasattr(fs, "copy_file"):
        raise OSError(
            f"cannot move folders with {type(file_io).__name__}: it has no pyarrow file system "
            "to copy objects with (branch create/rename/delete need one on object stores)"
        )
    return fs


def list_files(file_io: Any, directory: str) -> list[tuple[str, Any]]:
    """``(relative key, FileInfo)`` of every object under ``directory`` (recursive)."""
    from pyarrow import fs as pafs

    fs = _filesystem(file_io)
    base = file_io.to_filesystem_path(directory).rstrip("/")
    selector = pafs.FileSelector(base, recursive=True, allow_not_found=True)
    out = []
    for info in fs.get_file_info(selector):
        if info.type == pafs.FileType.File:
            out.append((info.path[len(base) + 1:], info))
    return out


def move_dir(file_io: Any, src: str, dst: str) -> None:
    """Move folder ``src`` to ``dst``; ``FileExistsError`` if ``dst`` exists.

    Local paths are one atomic rename (a branch appears or disappears at once; POSIX
    rename would replace an empty ``dst`` silently, so an existing one is refused).
    Object stores have no directory rename (pyarrow's S3 ``move`` refuses one): the
    objects are copied and then deleted, in the order explained in the module
    docstring, under a claim object that makes two racing movers one winner and one
    ``FileExistsError``. Readers may see ``dst`` fill up during the copy.
    """
    local_src, local_dst = fileops.local_path(src), fileops.local_path(dst)
    if local_src is not None and local_dst is not None:
        if os.path.exists(local_dst):
            raise FileExistsError(dst)
        os.rename(local_src, local_dst)
        return
    if file_io.exists(dst):
        raise FileExistsError(dst)
    # A claim object beside dst, created with a real create-if-absent, so of two racing
    # movers exactly one copies and the other gets FileExistsError.
    parent, name = dst.rstrip("/").rsplit("/", 1)
    claim = f"{parent}/.{name}.claim"
    if not fileops.create_new(file_io, claim, str(uuid.uuid4())):
        raise FileExistsError(
            f"{dst} is being created by another writer (claim {claim}); if none is running, delete the claim"
        )
    try:
        if file_io.exists(dst):
            raise FileExistsError(dst)
        _copy_then_delete(file_io, src, dst)
    finally:
        fileops.delete_file(file_io, claim)


def _copy_then_delete(file_io: Any, src: str, dst: str) -> None:
    if getattr(file_io, "filesystem", None) is None:  # no pyarrow file system: generic walk
        src_root = src.rstrip("/")
        for path in sorted(fileops.walk_files(file_io, src_root)):
            fileops.copy_atomic(file_io, path, f"{dst.rstrip('/')}{path[len(src_root):]}")
        fileops.delete_tree(file_io, src_root)
        return
    files = list_files(file_io, src)
    if not files:
        if not file_io.exists(src):
            raise FileNotFoundError(src)
        return  # an empty "folder" on an object store is nothing to move
    fs = _filesystem(file_io)
    target = file_io.to_filesystem_path(dst).rstrip("/")
    source = file_io.to_filesystem_path(src).rstrip("/")
    for rel, _ in sorted(files, key=lambda item: (_rank(item[0]), item[0])):
        fs.copy_file(f"{source}/{rel}", f"{target}/{rel}")
    delete_files(file_io, src, files)


def delete_files(file_io: Any, directory: str, files: list[tuple[str, Any]] | None = None) -> None:
    """Delete every object under ``directory``: snapshots and hints first, schemas last."""
    fs = _filesystem(file_io)
    base = file_io.to_filesystem_path(directory).rstrip("/")
    listed = list_files(file_io, directory) if files is None else files
    for rel, _ in sorted(listed, key=lambda item: (-_rank(item[0]), not item[0].startswith("tag/"), item[0])):
        with contextlib.suppress(FileNotFoundError):
            fs.delete_file(f"{base}/{rel}")
    # pyarrow's S3 file system writes empty "folder/" marker objects; a marker left
    # behind would keep listing the old branch folder, so the prefix goes as a whole.
    with contextlib.suppress(FileNotFoundError):
        fs.delete_dir(base)
