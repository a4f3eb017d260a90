"""Small file helpers with the atomicity the branch operations rely on.

Paimon metadata files are tiny JSON documents; what matters is that a reader never
sees half of one and that "create only if absent" is a real compare-and-set, because
that is how a snapshot commit wins or loses against a concurrent writer. On a local
(or POSIX-like mounted) file system we use ``os.replace`` / ``os.link`` / ``os.rename``
directly. On other pypaimon file systems (object stores) a PUT is atomic per object,
and create-if-absent goes through ``storage.create_if_absent``: a conditional PUT or a
database lock as ``commit.atomicity`` says, never pypaimon's exists-then-move.
"""

from __future__ import annotations

import os
import shutil
import uuid
from typing import Any
from urllib.parse import urlparse


def local_path(path: str) -> str | None:
    """The OS path for a local ``path`` (plain or ``file://``), else ``None``."""
    parsed = urlparse(path)
    if parsed.scheme in ("", "file"):
        return parsed.path if parsed.scheme else path
    if len(parsed.scheme) == 1:  # a Windows drive letter
        return path
    return None


def _tmp_name(path: str) -> str:
    head, tail = os.path.split(path)
    return os.path.join(head, f".{tail}.{uuid.uuid4().hex}.tmp")


def exists(file_io: Any, path: str) -> bool:
    lp = local_path(path)
    return os.path.exists(lp) if lp is not None else bool(file_io.exists(path))


def read_text(file_io: Any, path: str) -> str | None:
    """The file's text, or ``None`` if it does not exist."""
    lp = local_path(path)
    if lp is not None:
        try:
            with open(lp, encoding="utf-8") as fh:
                return fh.read()
        except FileNotFoundError:
            return None
    if not file_io.exists(path):
        return None
    return file_io.read_file_utf8(path)


def write_atomic(file_io: Any, path: str, text: str) -> None:
    """Create or replace ``path`` so readers see the old or the new text, never a part."""
    lp = local_path(path)
    if lp is None:
        file_io.overwrite_file_utf8(path, text)
        return
    os.makedirs(os.path.dirname(lp), exist_ok=True)
    tmp = _tmp_name(lp)
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, lp)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def create_new(file_io: Any, path: str, text: str) -> bool:
    """Write ``path`` only if it does not exist; ``False`` if someone else has it.

    Locally this is a hard link of a fully written temp file: the link either creates
    the name or fails with ``FileExistsError``, also against other processes.
    """
    lp = local_path(path)
    if lp is None:
        from .storage import create_if_absent

        return create_if_absent(file_io, path, text)
    os.makedirs(os.path.dirname(lp), exist_ok=True)
    tmp = _tmp_name(lp)
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, lp)
        except FileExistsError:
            return False
        except OSError:
            # no hard links on this file system: check-then-rename (atomic content,
            # create-if-absent only as strong as the check)
            if os.path.exists(lp):
                return False
            os.rename(tmp, lp)
        return True
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def copy_atomic(file_io: Any, src: str, dst: str) -> None:
    """Copy a small metadata file so the target appears complete or not at all."""
    text = read_text(file_io, src)
    if text is None:
        raise FileNotFoundError(src)
    write_atomic(file_io, dst, text)


def delete_file(file_io: Any, path: str) -> bool:
    """Delete one file; ``False`` if it was already gone (so steps can be rerun)."""
    lp = local_path(path)
    if lp is not None:
        try:
            os.unlink(lp)
            return True
        except FileNotFoundError:
            return False
    if not file_io.exists(path):
        return False
    file_io.delete(path, False)
    return True


def delete_tree(file_io: Any, path: str) -> None:
    lp = local_path(path)
    if lp is not None:
        shutil.rmtree(lp, ignore_errors=True)
    elif file_io.exists(path):
        file_io.delete(path, True)


def list_names(file_io: Any, directory: str) -> list[str]:
    """Names of the entries of ``directory`` (empty if it does not exist)."""
    lp = local_path(directory)
    if lp is not None:
        try:
            return sorted(os.listdir(lp))
        except FileNotFoundError:
            return []
    if not file_io.exists(directory):
        return []
    return sorted(str(s.path).rstrip("/").rsplit("/", 1)[-1] for s in file_io.list_status(directory))


def walk_files(file_io: Any, directory: str) -> list[str]:
    """Paths of every file under ``directory`` (recursive), for non-local file systems."""
    out: list[str] = []
    base = directory.rstrip("/")
    for name in list_names(file_io, base):
        path = f"{base}/{name}"
        if file_io.is_dir(path):
            out.extend(walk_files(file_io, path))
        else:
            out.append(path)
    return out


def mtime_millis(file_io: Any, path: str) -> int | None:
    """Modification time in epoch milliseconds, ``None`` if unknown."""
    lp = local_path(path)
    if lp is not None:
        try:
            return int(os.stat(lp).st_mtime * 1000)
        except FileNotFoundError:
            return None
    try:
        status = file_io.get_file_status(path)
    except Exception:  # noqa: BLE001 - listing metadata is best effort
        return None
    mtime = getattr(status, "mtime", None)
    if mtime is None:
        return None
    return int(mtime.timestamp() * 1000) if hasattr(mtime, "timestamp") else int(mtime)
