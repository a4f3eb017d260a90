"""A fast reader of Paimon manifest files (Avro), for planning at millions of files.

pypaimon reads a manifest entry in ~50 us of CPU (fastavro's generic decoder, then a
``DataFileMeta`` with decoded statistics, a ``GenericRow`` partition and timestamps),
which makes a plan of 1,000,000 files cost over a minute before a single path is
built. Planning needs a handful of fields per file. This module decodes manifest
blocks with a decoder generated for the file's own writer schema (Avro data must be
read with the schema it was written with; Java, pypaimon and Rust writers differ in
field order and unions), keeping the planning fields as plain Python values and the
statistics as raw bytes (decoded only if a filter needs them):

``RawEntry``: kind, partition (Paimon ``BinaryRow`` bytes), bucket, total_buckets,
file_name, file_size, row_count, schema_id, level, extra_files, embedded_index,
external_path, delete_row_count, file_source, value stats (min bytes, max bytes,
null counts), value_stats_cols, first_row_id, write_cols, min_sequence_number,
max_sequence_number, creation_time (epoch millis).

A schema construct the generator does not know falls back to fastavro's reader for
that file, with the same output. Entries are yielded one block at a time, so a caller
that streams them never holds a manifest's worth of objects.

Block partitions: the manifests this package writes carry, in the Avro header's
metadata (``BLOCK_PARTITIONS_KEY``), the one partition each block holds (or "mixed").
A filtered read skips a block of a rejected partition without decompressing it, so a
plan of one partition out of many reads that partition's blocks, not the whole
partition-sorted manifest. Other readers ignore metadata they do not know (the Avro
specification lets a file carry any); a file without it is read entry by entry.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

import fastavro

__all__ = ["BLOCK_PARTITIONS_KEY", "KIND_ADD", "KIND_DELETE", "RawEntry", "decode_manifest", "read_entries"]

#: a manifest entry's ``_KIND``: the file is added / removed (Paimon's ``FileKind``)
KIND_ADD = 0
KIND_DELETE = 1

#: Avro header metadata naming each block's single partition (see the module docstring)
BLOCK_PARTITIONS_KEY = "paimon-provider.block-partitions"
_INDEX_VERSION = 1
_MIXED = -1  # a block holding entries of several partitions
#: uncompressed bytes of records per block the writer aims for (a block is the unit a
#: filtered read skips)
BLOCK_BYTES = 64 * 1024


class RawEntry(NamedTuple):
    kind: int
    partition: bytes
    bucket: int
    total_buckets: int
    file_name: str
    file_size: int
    row_count: int
    schema_id: int
    level: int
    extra_files: tuple
    embedded_index: bytes | None
    external_path: str | None
    delete_row_count: int | None
    file_source: int | None
    stats_min: bytes
    stats_max: bytes
    stats_null_counts: tuple | None
    value_stats_cols: tuple | None
    first_row_id: int | None
    write_cols: tuple | None
    min_sequence_number: int
    max_sequence_number: int
    creation_time: int | None

    def identifier(self) -> tuple:
        """Paimon's ``FileEntry.Identifier`` (partition bytes stand for the partition)."""
        return (self.partition, self.bucket, self.level, self.file_name, self.extra_files,
                self.embedded_index, self.external_path)


# (RawEntry field, path in the record) for every field the generated decoder keeps
_WANTED: dict[tuple[str, ...], str] = {
    ("_KIND",): "kind",
    ("_PARTITION",): "partition",
    ("_BUCKET",): "bucket",
    ("_TOTAL_BUCKETS",): "total_buckets",
    ("_FILE", "_FILE_NAME"): "file_name",
    ("_FILE", "_FILE_SIZE"): "file_size",
    ("_FILE", "_ROW_COUNT"): "row_count",
    ("_FILE", "_SCHEMA_ID"): "schema_id",
    ("_FILE", "_LEVEL"): "level",
    ("_FILE", "_EXTRA_FILES"): "extra_files",
    ("_FILE", "_EMBEDDED_FILE_INDEX"): "embedded_index",
    ("_FILE", "_EXTERNAL_PATH"): "external_path",
    ("_FILE", "_DELETE_ROW_COUNT"): "delete_row_count",
    ("_FILE", "_FILE_SOURCE"): "file_source",
    ("_FILE", "_VALUE_STATS", "_MIN_VALUES"): "stats_min",
    ("_FILE", "_VALUE_STATS", "_MAX_VALUES"): "stats_max",
    ("_FILE", "_VALUE_STATS", "_NULL_COUNTS"): "stats_null_counts",
    ("_FILE", "_VALUE_STATS_COLS"): "value_stats_cols",
    ("_FILE", "_FIRST_ROW_ID"): "first_row_id",
    ("_FILE", "_WRITE_COLS"): "write_cols",
    ("_FILE", "_MIN_SEQUENCE_NUMBER"): "min_sequence_number",
    ("_FILE", "_MAX_SEQUENCE_NUMBER"): "max_sequence_number",
    ("_FILE", "_CREATION_TIME"): "creation_time",
}
_DEFAULTS: dict[str, Any] = {
    "extra_files": (), "stats_min": b"", "stats_max": b"", "total_buckets": -1,
    "min_sequence_number": 0, "max_sequence_number": 0, "level": 0, "schema_id": 0,
}


class _UnsupportedSchemaError(Exception):
    """The generator does not know a construct of this schema (fastavro reads it)."""


def _varint(buf: bytes, i: int, b: int) -> tuple[int, int]:
    """The rest of a multi-byte zig-zag varint whose first byte ``b`` was read."""
    n = b & 0x7F
    shift = 7
    while True:
        b = buf[i]
        i += 1
        n |= (b & 0x7F) << shift
        if not b & 0x80:
            return (n >> 1) ^ -(n & 1), i
        shift += 7


class _Gen:
    """Writes the Python source of a decoder for one writer schema."""

    def __init__(self, named: dict[str, Any]) -> None:
        self.lines: list[str] = []
        self.tmp = 0
        self.named = named
        self._skip_depth = 0

    def var(self) -> str:
        self.tmp += 1
        return f"t{self.tmp}"

    def emit(self, depth: int, line: str) -> None:
        self.lines.append("    " * depth + line)

    def long(self, depth: int, target: str) -> None:
        self.emit(depth, "b = buf[i]; i += 1")
        self.emit(depth, "if b & 0x80:")
        self.emit(depth + 1, f"{target}, i = _varint(buf, i, b)")
        self.emit(depth, "else:")
        self.emit(depth + 1, f"{target} = (b >> 1) ^ -(b & 1)")

    def value(self, schema: Any, depth: int, target: str | None, path: tuple[str, ...],
              skip: bool = False) -> None:
        """Code that reads one value of ``schema`` into ``target`` (None: skip it).

        ``skip``: nothing below is kept either (walk over a rejected entry's fields).
        """
        if skip:
            self._skip_depth += 1
        try:
            self._value(schema, depth, None if self._skip_depth else target, path)
        finally:
            if skip:
                self._skip_depth -= 1

    def _value(self, schema: Any, depth: int, target: str | None, path: tuple[str, ...]) -> None:
        if isinstance(schema, str) and schema in self.named:
            schema = self.named[schema]
        if isinstance(schema, list):
            self.union(schema, depth, target, path)
            return
        if isinstance(schema, dict):
            kind = schema.get("type")
            if kind == "record":
                if schema.get("name"):
                    self.named[schema["name"]] = schema
                    if schema.get("namespace"):
                        self.named[f"{schema['namespace']}.{schema['name']}"] = schema
                for f in schema["fields"]:
                    sub = (*path, f["name"])
                    self.value(f["type"], depth, None if self._skip_depth else _WANTED.get(sub), sub)
                if target is not None:
                    raise _UnsupportedSchemaError(f"record kept as a value at {path}")
                return
            if kind == "array":
                self.array(schema["items"], depth, target, path)
                return
            if kind == "map":
                self.map(schema["values"], depth, target)
                return
            if kind == "fixed":
                size = int(schema["size"])
                self.emit(depth, f"{target or '_'} = buf[i:i + {size}]; i += {size}")
                return
            if kind == "enum":
                self.long(depth, target or "_")
                return
            if isinstance(kind, (str, list, dict)):
                self.value(kind, depth, target, path)  # logical types: their base type
                return
            raise _UnsupportedSchemaError(f"schema {schema!r}")
        t = target or "_"
        if schema in ("int", "long"):
            self.long(depth, t)
        elif schema in ("bytes", "string"):
            n = self.var()
            self.long(depth, n)
            if target is None:
                self.emit(depth, f"i += {n}")
            else:
                decode = ".decode()" if schema == "string" else ""
                self.emit(depth, f"{t} = buf[i:i + {n}]{decode}; i += {n}")
        elif schema == "boolean":
            self.emit(depth, f"{t} = buf[i] == 1; i += 1")
        elif schema == "float":
            self.emit(depth, f"{t} = _f(buf, i)[0]; i += 4")
        elif schema == "double":
            self.emit(depth, f"{t} = _d(buf, i)[0]; i += 8")
        elif schema == "null":
            self.emit(depth, f"{t} = None")
        else:
            raise _UnsupportedSchemaError(f"type {schema!r}")

    def union(self, branches: list, depth: int, target: str | None, path: tuple[str, ...]) -> None:
        idx = self.var()
        self.long(depth, idx)
        for n, branch in enumerate(branches):
            self.emit(depth, f"{'if' if n == 0 else 'elif'} {idx} == {n}:")
            self.value(branch, depth + 1, target, path)
        self.emit(depth, "else:")
        self.emit(depth + 1, f"raise ValueError('bad union index %d' % {idx})")

    def array(self, items: Any, depth: int, target: str | None, path: tuple[str, ...]) -> None:
        acc, count, item = self.var(), self.var(), self.var()
        if target is not None:
            self.emit(depth, f"{acc} = []")
        self.emit(depth, "while True:")
        self.long(depth + 1, count)
        self.emit(depth + 1, f"if {count} == 0:")
        self.emit(depth + 2, "break")
        self.emit(depth + 1, f"if {count} < 0:")
        self.emit(depth + 2, f"{count} = -{count}")
        self.long(depth + 2, "_")  # block size in bytes
        self.emit(depth + 1, f"for _n in range({count}):")
        self.value(items, depth + 2, item if target is not None else None, (*path, "[]"))
        if target is not None:
            self.emit(depth + 2, f"{acc}.append({item})")
            self.emit(depth, f"{target} = tuple({acc})")

    def map(self, values: Any, depth: int, target: str | None) -> None:
        if target is not None:
            raise _UnsupportedSchemaError("map kept as a value")
        count = self.var()
        self.emit(depth, "while True:")
        self.long(depth + 1, count)
        self.emit(depth + 1, f"if {count} == 0:")
        self.emit(depth + 2, "break")
        self.emit(depth + 1, f"if {count} < 0:")
        self.emit(depth + 2, f"{count} = -{count}")
        self.long(depth + 2, "_")
        self.emit(depth + 1, f"for _n in range({count}):")
        self.value("string", depth + 2, None, ())
        self.value(values, depth + 2, None, ())


_decoders: dict[str, Any] = {}


def _decoder_for(schema: Any, spans: bool = False) -> Any:
    """The generated block decoder for ``schema`` (cached by its JSON), or None.

    With ``spans`` it returns ``(entry, record bytes)`` pairs: a merge copies a live
    record's bytes into the new manifest instead of encoding it again.
    """
    import json

    key = json.dumps(schema, sort_keys=True) + ("#spans" if spans else "")
    if key in _decoders:
        return _decoders[key]
    gen = _Gen({})
    fields = list(RawEntry._fields)
    try:
        if not isinstance(schema, dict) or schema.get("type") != "record":
            raise _UnsupportedSchemaError("top level is not a record")
        for f in fields:
            gen.emit(1, f"{f} = {_DEFAULTS.get(f)!r}")
        gen.emit(1, "out = []")
        gen.emit(1, "for _r in range(count):")
        if spans:
            gen.emit(2, "start = i")
            gen.value(schema, 2, None, ())
            gen.emit(2, f"out.append((_E({', '.join(fields)}), buf[start:i]))")
        else:
            # fields up to _PARTITION, then the rest decoded only for accepted partitions
            # (a rejected entry is walked over without building a value)
            top = list(schema["fields"])
            names = [f["name"] for f in top]
            if "_PARTITION" not in names:
                raise _UnsupportedSchemaError("no _PARTITION field")
            cut = names.index("_PARTITION") + 1
            for f in top[:cut]:
                gen.value(f["type"], 2, _WANTED.get((f["name"],)), (f["name"],))
            gen.emit(2, "if accept is None or accept(partition):")
            for f in top[cut:]:
                gen.value(f["type"], 3, _WANTED.get((f["name"],)), (f["name"],))
            gen.emit(3, f"out.append(_E({', '.join(fields)}))")
            gen.emit(2, "else:")
            for f in top[cut:]:
                gen.value(f["type"], 3, None, (f["name"],), skip=True)
        gen.emit(1, "if i != len(buf):")
        gen.emit(2, "raise ValueError('manifest block not fully read')")
        gen.emit(1, "return out")
    except _UnsupportedSchemaError:
        _decoders[key] = None
        return None
    source = "def decode(buf, count, accept=None):\n    i = 0\n" + "\n".join(gen.lines) + "\n"
    scope: dict[str, Any] = {"_varint": _varint, "_E": RawEntry,
                             "_f": struct.Struct("<f").unpack_from, "_d": struct.Struct("<d").unpack_from}
    exec(compile(source, "<paimon manifest decoder>", "exec"), scope)
    decoder = scope["decode"]
    _decoders[key] = decoder
    return decoder


def _bytes_of(block: Any) -> bytes:
    data = block.bytes_
    getvalue = getattr(data, "getvalue", None)
    return getvalue() if getvalue is not None else data.read()


def decode_manifest(data: bytes, accept: Any = None) -> Iterator[list[RawEntry]]:
    """The entries of one manifest file's bytes, a block (list) at a time.

    ``accept(partition_bytes) -> bool``: entries of other partitions are skipped without
    building them (the caller's filter; None keeps every entry). A block the file's
    block-partitions metadata names as one rejected partition is not even decompressed.
    """
    if accept is not None:
        indexed = _decode_indexed(data, accept)
        if indexed is not None:
            yield from indexed
            return
    blocks = fastavro.block_reader(io.BytesIO(data))
    decoder = _decoder_for(blocks.writer_schema)
    if decoder is None:
        entries = [_from_record(r) for r in fastavro.reader(io.BytesIO(data)) if isinstance(r, dict)]
        yield [e for e in entries if accept is None or accept(e.partition)]
        return
    for block in blocks:
        yield decoder(_bytes_of(block), block.num_records, accept)


def _decode_indexed(data: bytes, accept: Any) -> Iterator[list[RawEntry]] | None:
    """Blocks of a file with block-partitions metadata (None: the file has none usable)."""
    import json

    try:
        if BLOCK_PARTITIONS_KEY not in read_header(data)[0]:
            return None  # not split: fastavro reads the file
        container = read_container(data)
    except ValueError:
        return None
    tags = container.block_partitions()
    codec = container.codec
    if tags is None or len(tags) != len(container.blocks) or codec not in WRITABLE_CODECS:
        return None
    decoder = _decoder_for(json.loads(container.metadata["avro.schema"]))
    if decoder is None:
        return None

    def blocks() -> Iterator[list[RawEntry]]:
        for block, tag in zip(container.blocks, tags, strict=True):
            if tag is not None and not accept(tag):
                continue  # one rejected partition: not decompressed, not decoded
            count, payload = _block_payload(block)
            # a block of one accepted partition needs no test per entry
            yield decoder(_decompress(codec, payload), count, None if tag is not None else accept)

    return blocks()


def read_bytes(file_io: Any, path: str, size: int | None = None) -> bytes:
    """A manifest file's bytes through pypaimon's file IO (checked against its known size)."""
    stream = file_io.new_input_stream(path)
    try:
        data = stream.read()
    finally:
        stream.close()
    if size is not None and size > 0 and len(data) != size:
        raise EOFError(f"truncated manifest file {path}: {len(data)} of {size} bytes")
    return bytes(data)


def read_entries(file_io: Any, path: str, size: int | None = None,
                 accept: Any = None) -> Iterator[list[RawEntry]]:
    """Read the manifest at ``path`` through pypaimon's file IO; entries block by block."""
    yield from decode_manifest(read_bytes(file_io, path, size), accept)


@dataclass(frozen=True)
class RawManifest:
    """A manifest's entries with their encoded records, and how the file was written."""

    schema: Any  # the writer schema (parsed JSON)
    codec: str
    records: list[tuple[RawEntry, bytes]]


def read_raw(data: bytes) -> RawManifest | None:
    """Entries and record bytes of a manifest (None: a schema the generator does not know)."""
    blocks = fastavro.block_reader(io.BytesIO(data))
    decoder = _decoder_for(blocks.writer_schema, spans=True)
    if decoder is None:
        return None
    records: list[tuple[RawEntry, bytes]] = []
    for block in blocks:
        records.extend(decoder(_bytes_of(block), block.num_records))
    return RawManifest(blocks.writer_schema, blocks.codec, records)


WRITABLE_CODECS = ("null", "deflate", "zstandard")


def _compress(codec: str, data: bytes) -> bytes:
    if codec == "null":
        return data
    if codec == "deflate":
        import zlib

        packer = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)
        return packer.compress(data) + packer.flush()
    import zstandard

    return zstandard.ZstdCompressor().compress(data)


def _zigzag(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _decompress(codec: str, data: bytes) -> bytes:
    if codec == "null":
        return data
    if codec == "deflate":
        import zlib

        return zlib.decompressobj(-15).decompress(data)
    import zstandard

    return zstandard.ZstdDecompressor().decompressobj().decompress(data)


def encode_manifests(schema: Any, codec: str, records: list[bytes], target_size: int,
                     block_bytes: int | None = None,
                     partitions: list[bytes] | None = None) -> Iterator[tuple[bytes, int, int]]:
    """Avro container files of ``records`` (already encoded with ``schema``), rolled at
    ``target_size`` bytes: yields ``(file bytes, first record, end record)``.

    ``partitions`` (each record's partition bytes): every file also names each block's
    single partition in its header (``BLOCK_PARTITIONS_KEY``), so a filtered read skips
    the blocks of other partitions.
    """
    if codec not in WRITABLE_CODECS:
        raise ValueError(f"cannot write codec {codec!r}")
    block_bytes = block_bytes or BLOCK_BYTES
    header_buf = io.BytesIO()
    fastavro.writer(header_buf, fastavro.parse_schema(schema), [], codec=codec)
    base = read_container(header_buf.getvalue())
    start = 0
    while start < len(records):
        blocks: list[bytes] = []
        tags: list[bytes | None] = []
        size = base.header_size
        i = start
        while i < len(records) and (i == start or size < target_size):  # a block at least
            first = i
            block_size = 0
            while i < len(records) and block_size < block_bytes:
                block_size += len(records[i])
                i += 1
            payload = _compress(codec, b"".join(records[first:i]))
            blocks.append(_zigzag(i - first) + _zigzag(len(payload)) + payload)
            size += len(blocks[-1]) + len(base.sync)
            if partitions is not None:
                tags.append(_single_partition(partitions, first, i))
        metadata = dict(base.metadata)
        if partitions is not None:
            metadata[BLOCK_PARTITIONS_KEY] = encode_block_partitions(tags)
        yield build_container(metadata, base.sync, blocks), start, i
        start = i


def _single_partition(partitions: list[bytes], start: int, end: int) -> bytes | None:
    """The partition every record in ``start:end`` has (None: several)."""
    first = partitions[start]
    return first if all(partitions[n] == first for n in range(start + 1, end)) else None


def encode_block_partitions(tags: list[bytes | None]) -> bytes:
    """Header metadata value: a version, the block count, each block's partition or -1,
    as base64 text (readers such as fastavro, hence pypaimon, decode every metadata
    value as UTF-8)."""
    import base64

    out = bytearray(_zigzag(_INDEX_VERSION) + _zigzag(len(tags)))
    for tag in tags:
        if tag is None:
            out += _zigzag(_MIXED)
        else:
            out += _zigzag(len(tag)) + tag
    return base64.b64encode(bytes(out))


def decode_block_partitions(text: bytes) -> list[bytes | None] | None:
    """``encode_block_partitions``' list (None: not a value this reader knows)."""
    import base64
    import binascii

    try:
        value = base64.b64decode(text, validate=True)
        version, i = _read_long(value, 0)
        if version != _INDEX_VERSION:
            return None
        count, i = _read_long(value, i)
        tags: list[bytes | None] = []
        for _ in range(count):
            n, i = _read_long(value, i)
            if n == _MIXED:
                tags.append(None)
            else:
                tags.append(value[i:i + n])
                i += n
    except (binascii.Error, IndexError):
        return None
    return tags if i == len(value) else None


def _from_record(r: dict) -> RawEntry:
    """fastavro's record -> RawEntry (the fallback for schemas the generator does not know)."""
    f = r["_FILE"]
    stats = f.get("_VALUE_STATS") or {}
    created = f.get("_CREATION_TIME")
    if created is not None and not isinstance(created, int):
        created = int(created.timestamp() * 1000)

    def tup(value: Any) -> tuple | None:
        return None if value is None else tuple(value)

    return RawEntry(
        kind=r["_KIND"], partition=r["_PARTITION"], bucket=r["_BUCKET"],
        total_buckets=r.get("_TOTAL_BUCKETS", -1), file_name=f["_FILE_NAME"],
        file_size=f["_FILE_SIZE"], row_count=f["_ROW_COUNT"], schema_id=f.get("_SCHEMA_ID", 0),
        level=f.get("_LEVEL", 0), extra_files=tuple(f.get("_EXTRA_FILES") or ()),
        embedded_index=f.get("_EMBEDDED_FILE_INDEX"), external_path=f.get("_EXTERNAL_PATH"),
        delete_row_count=f.get("_DELETE_ROW_COUNT"), file_source=f.get("_FILE_SOURCE"),
        stats_min=stats.get("_MIN_VALUES", b""), stats_max=stats.get("_MAX_VALUES", b""),
        stats_null_counts=tup(stats.get("_NULL_COUNTS")), value_stats_cols=tup(f.get("_VALUE_STATS_COLS")),
        first_row_id=f.get("_FIRST_ROW_ID"), write_cols=tup(f.get("_WRITE_COLS")),
        min_sequence_number=f.get("_MIN_SEQUENCE_NUMBER", 0),
        max_sequence_number=f.get("_MAX_SEQUENCE_NUMBER", 0), creation_time=created,
    )


def _read_long(data: bytes, i: int) -> tuple[int, int]:
    b = data[i]
    i += 1
    if b & 0x80:
        return _varint(data, i, b)
    return (b >> 1) ^ -(b & 1), i


@dataclass(frozen=True)
class Container:
    """An Avro container file split without decoding: its header metadata, sync marker
    and blocks (each ``count + size + compressed data`` exactly as stored)."""

    metadata: dict[str, bytes]
    sync: bytes
    blocks: list[bytes]
    header_size: int  # bytes of the header, sync marker included

    @property
    def codec(self) -> str:
        return self.metadata.get("avro.codec", b"null").decode()

    def block_partitions(self) -> list[bytes | None] | None:
        """Each block's single partition (None in the list: mixed; None: not recorded)."""
        value = self.metadata.get(BLOCK_PARTITIONS_KEY)
        return None if value is None else decode_block_partitions(value)


def read_header(data: bytes) -> tuple[dict[str, bytes], int]:
    """An Avro container file's header metadata, and where its sync marker starts
    (``ValueError`` if it is not one). Reads nothing past the header."""
    if data[:4] != b"Obj\x01":
        raise ValueError("not an Avro container file")
    metadata: dict[str, bytes] = {}
    i = 4
    while True:  # the metadata map
        count, i = _read_long(data, i)
        if count == 0:
            break
        if count < 0:
            count = -count
            _size, i = _read_long(data, i)
        for _ in range(count):
            n, i = _read_long(data, i)
            key = data[i:i + n].decode()
            i += n
            n, i = _read_long(data, i)
            metadata[key] = data[i:i + n]
            i += n
    return metadata, i


def read_container(data: bytes) -> Container:
    """Split an Avro container file (``ValueError`` if it is not one)."""
    metadata, i = read_header(data)
    sync = data[i:i + 16]
    i += 16
    header_size = i
    blocks = []
    while i < len(data):
        start = i
        _count, i = _read_long(data, i)
        size, i = _read_long(data, i)
        i += size
        blocks.append(data[start:i])
        if data[i:i + 16] != sync:
            raise ValueError("Avro sync marker mismatch")
        i += 16
    return Container(metadata, sync, blocks, header_size)


def build_container(metadata: dict[str, bytes], sync: bytes, blocks: list[bytes]) -> bytes:
    """The bytes of an Avro container file (``read_container``'s inverse)."""
    out = bytearray(b"Obj\x01")
    if metadata:
        out += _zigzag(len(metadata))
        for key, value in metadata.items():
            name = key.encode()
            out += _zigzag(len(name)) + name + _zigzag(len(value)) + value
    out += _zigzag(0) + sync
    for block in blocks:
        out += block + sync
    return bytes(out)


def _block_payload(block: bytes) -> tuple[int, bytes]:
    """A stored block's record count and compressed data."""
    count, i = _read_long(block, 0)
    _size, i = _read_long(block, i)
    return count, block[i:]


def concat_manifests(files: list[bytes], target_size: int) -> Iterator[tuple[bytes, int, int]]:
    """Manifests holding every entry of ``files`` in order, blocks copied as stored, rolled
    at ``target_size``: yields ``(file bytes, first file, end file)``; a file is never split.

    All files must share one schema and codec: ``ValueError`` otherwise. Block partitions
    are carried over with their blocks (a block of a file without them counts as mixed).
    """
    parts = [read_container(f) for f in files]
    first = parts[0]

    def plain(c: Container) -> dict[str, bytes]:
        return {k: v for k, v in c.metadata.items() if k != BLOCK_PARTITIONS_KEY}

    if any(plain(p) != plain(first) for p in parts):
        raise ValueError("manifests of different schemas or codecs")
    indexed = any(p.block_partitions() is not None for p in parts)
    start = 0
    while start < len(parts):
        blocks: list[bytes] = []
        tags: list[bytes | None] = []
        size = first.header_size
        i = start
        while i < len(parts) and (i == start or size < target_size):
            blocks += parts[i].blocks
            size += sum(len(b) + len(first.sync) for b in parts[i].blocks)
            known = parts[i].block_partitions()
            if known is None or len(known) != len(parts[i].blocks):
                known = [None] * len(parts[i].blocks)
            tags += known
            i += 1
        metadata = plain(first)
        if indexed:
            metadata[BLOCK_PARTITIONS_KEY] = encode_block_partitions(tags)
        yield build_container(metadata, first.sync, blocks), start, i
        start = i
