"""Partition specs: turn ``{"dt": "2026-11-03"}`` into the column's Python value.

Users give partitions as text (option ``overwrite-partition=dt=2026-11-03``, the
compaction job's ``--partition dt=2026-11-03``, an operator's ``partitions``), but
a Paimon partition is a typed row: pypaimon compares a partition spec with the
values of the manifests' binary rows (``datetime.date(2026, 11, 3)`` for a DATE,
``Decimal('1.50')`` for a DECIMAL(10, 2), ``True`` for a BOOLEAN...). Comparing
text with those values never matches, so an overwrite failed at commit, after the
whole job ran, and ``--partition`` on a BOOLEAN or TIMESTAMP column found nothing.

This module is the one place that parses such text, by the column's Paimon type,
the way Paimon Java's ``TypeUtils.castFromString`` reads a partition spec:

- CHAR/VARCHAR/STRING: the text itself (at most the declared length);
- TINYINT/SMALLINT/INT/BIGINT: a whole number in the type's range;
- FLOAT/DOUBLE: a number (FLOAT rounded to 32 bits, as it is stored);
- DECIMAL(p, s): a number with at most ``s`` decimal places and ``p`` digits;
- BOOLEAN: ``true`` or ``false`` (any case);
- DATE: ``yyyy-MM-dd``;
- TIMESTAMP(p): ``yyyy-MM-dd[ HH:mm[:ss[.fraction]]]`` (``T`` may replace the space),
  no finer than the precision and no offset;
- TIMESTAMP_LTZ(p) (Spark's TIMESTAMP): the same, with an optional offset (``Z``,
  ``+01:00``); without one the local time zone of the process is used, as Paimon
  Java uses the JVM's default time zone;
- TIME(p): ``HH:mm[:ss[.fraction]]``;
- the table's ``partition.default-name`` (``__DEFAULT_PARTITION__``): the null partition.

Anything else is refused with an error naming the column, its type and the value,
so bad input stops before a job writes a single file. No Airflow, no Spark here.
"""

from __future__ import annotations

import datetime as dt
import re
import struct
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from .errors import InvalidArgumentError

DEFAULT_PARTITION_NAME = "__DEFAULT_PARTITION__"
DEFAULT_NAME_OPTION = "partition.default-name"

_INT_RANGES = {
    "TINYINT": 8,
    "SMALLINT": 16,
    "INT": 32,
    "INTEGER": 32,
    "BIGINT": 64,
}
_WHOLE = re.compile(r"[+-]?\d+")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_TIME = r"(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?"
_TIMESTAMP = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:[ T]" + _TIME + r")?\s*(Z|[+-]\d{2}:?\d{2})?")
_TIME_ONLY = re.compile(_TIME)
_FLOAT_WORDS = {"nan": "nan", "infinity": "inf", "+infinity": "inf", "-infinity": "-inf"}


def partition_types(table: Any) -> dict[str, str]:
    """``{"dt": "DATE", "hr": "INT"}``: a pypaimon table's partition columns and types."""
    return {f.name: str(f.type) for f in table.partition_keys_fields}


def default_partition_name(options: Mapping[str, Any] | Any) -> str:
    """The table's name for the null partition (``partition.default-name``)."""
    if not isinstance(options, Mapping):  # a pypaimon table
        options = options.options.options.to_map()
    return str(options.get(DEFAULT_NAME_OPTION) or DEFAULT_PARTITION_NAME)


def parse_partition_spec(table: Any, spec: Mapping[str, Any], what: str = "partition") -> dict[str, Any]:
    """Parse ``spec`` (column -> text) by ``table``'s partition column types.

    ``what`` names the input in messages (``option 'overwrite-partition'``,
    ``--partition``). Raises ``InvalidArgumentError`` for an unknown column or a value
    the column's type cannot hold.
    """
    return parse_partition_values(
        partition_types(table), spec, default_partition_name(table), what, _table_name(table)
    )


def parse_partition_values(
    types: Mapping[str, str],
    spec: Mapping[str, Any],
    default_name: str = DEFAULT_PARTITION_NAME,
    what: str = "partition",
    table: str | None = None,
) -> dict[str, Any]:
    """As ``parse_partition_spec``, from ``{column: Paimon type text}`` (e.g. a schema dict)."""
    where = f" of {table}" if table else ""
    if not types:
        raise InvalidArgumentError(
            f"{what} {format_spec(spec)}: the table{where} is not partitioned; drop the partition"
        )
    unknown = [k for k in spec if k not in types]
    if unknown:
        raise InvalidArgumentError(
            f"{what} {format_spec(spec)} names {', '.join(unknown)}, which "
            f"{'is' if len(unknown) == 1 else 'are'} not a partition column{where} "
            f"(partition columns: {', '.join(types)})"
        )
    return {
        column: parse_partition_value(column, types[column], value, default_name, what)
        for column, value in spec.items()
    }


def parse_partition_value(
    column: str,
    type_text: str,
    value: Any,
    default_name: str = DEFAULT_PARTITION_NAME,
    what: str = "partition",
) -> Any:
    """One partition value as pypaimon holds it in a partition row (``None``: null)."""
    if value is None:
        return None
    text = value if isinstance(value, str) else str(value)
    if text == default_name:
        return None
    root, params = _type_root(type_text)
    parser = _PARSERS.get(root)
    if parser is None:
        raise InvalidArgumentError(
            f"{what}: column {column!r} has type {type_text}, which a partition spec cannot "
            "select (supported: string, integer, floating, decimal, boolean, date, time, "
            "timestamp types)"
        )
    try:
        return parser(text if root in ("CHAR", "VARCHAR", "STRING") else text.strip(), params)
    except _Bad as err:
        hint = f" ({err})" if str(err) else ""
        raise InvalidArgumentError(
            f"{what}: value {text!r} of partition column {column!r} is not a valid "
            f"{type_text}{hint}; use {_FORMATS[root]}, or {default_name!r} for the null partition"
        ) from None


def split_partition_text(text: str) -> dict[str, str]:
    """``"dt=2026-11-03,hr=3"`` -> ``{"dt": "2026-11-03", "hr": "3"}`` (values still text)."""
    spec: dict[str, str] = {}
    for part in str(text).split(","):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise InvalidArgumentError(
                f"partition {text!r} must be COLUMN=VALUE[,COLUMN=VALUE...], e.g. 'dt=2026-11-03,hr=3'"
            )
        spec[key.strip()] = value
    return spec


def format_spec(spec: Mapping[str, Any], default_name: str = DEFAULT_PARTITION_NAME) -> str:
    """``dt=2026-11-03,hr=3``: a spec (text or typed values) as it is written."""
    return ",".join(f"{k}={format_partition_value(v, default_name)}" for k, v in spec.items())


def format_partition_value(value: Any, default_name: str = DEFAULT_PARTITION_NAME) -> str:
    """A typed partition value as text that ``parse_partition_value`` reads back."""
    if value is None:
        return default_name
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            return value.astimezone(dt.timezone.utc).replace(tzinfo=None).isoformat(sep=" ") + "Z"
        return value.isoformat(sep=" ")
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    return str(value)


# --- one parser per type root ---------------------------------------------------------


class _Bad(ValueError):  # noqa: N818 - private, reads as what the value is
    """A value the type cannot hold; the message is a hint (may be empty)."""


def _type_root(type_text: str) -> tuple[str, list[int]]:
    """``"DECIMAL(10, 2) NOT NULL"`` -> ``("DECIMAL", [10, 2])``."""
    text = str(type_text).strip().upper()
    head = re.match(r"[A-Z_]*", text).group(0)  # type: ignore[union-attr]  # always matches
    params = re.search(r"\(([^)]*)\)", text)
    numbers = [int(p) for p in (params.group(1) if params else "").replace(" ", "").split(",") if p.isdigit()]
    if head == "TIMESTAMP" and "LOCAL TIME ZONE" in text:
        head = "TIMESTAMP_LTZ"
    return head, numbers


def _string(text: str, params: list[int]) -> str:
    if params and len(text) > params[0]:
        raise _Bad(f"longer than {params[0]} characters")
    return text


def _integer(bits: int) -> Any:
    def parse(text: str, _params: list[int]) -> int:
        if not _WHOLE.fullmatch(text):
            raise _Bad("not a whole number")
        number = int(text)
        low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        if not low <= number <= high:
            raise _Bad(f"out of range {low}..{high}")
        return number

    return parse


def _floating(single: bool) -> Any:
    def parse(text: str, _params: list[int]) -> float:
        word = _FLOAT_WORDS.get(text.lower())
        if word is None and not _NUMBER.fullmatch(text):
            raise _Bad("not a number")
        number = float(word or text)
        if single:  # a FLOAT partition holds a 32-bit value
            try:
                number = struct.unpack(">f", struct.pack(">f", number))[0]
            except OverflowError:
                raise _Bad("out of the FLOAT range") from None
        return number

    return parse


def _decimal(text: str, params: list[int]) -> Decimal:
    precision = params[0] if params else 10
    scale = params[1] if len(params) > 1 else 0
    if not _NUMBER.fullmatch(text):
        raise _Bad("not a number")
    try:
        number = Decimal(text)
        rounded = number.quantize(Decimal(1).scaleb(-scale))
    except InvalidOperation:
        raise _Bad(f"more than {precision} digits") from None
    if rounded != number:
        raise _Bad(f"more than {scale} decimal places")
    if abs(rounded) >= Decimal(10) ** (precision - scale):
        raise _Bad(f"more than {precision - scale} digits before the decimal point")
    return rounded


def _boolean(text: str, _params: list[int]) -> bool:
    lowered = text.lower()
    if lowered not in ("true", "false"):
        raise _Bad("")
    return lowered == "true"


def _date(text: str, _params: list[int]) -> dt.date:
    match = _DATE.fullmatch(text)
    if match is None:
        if _WHOLE.fullmatch(text):
            days = int(text)
            hint = "a number of days"
            if abs(days) < 3_000_000:
                day = dt.date(1970, 1, 1) + dt.timedelta(days=days)
                hint = f"legacy folder names count days since 1970-01-01: {text} is {day.isoformat()}"
            raise _Bad(hint)
        raise _Bad("")
    try:
        return dt.date(*(int(g) for g in match.groups()))
    except ValueError as err:
        raise _Bad(str(err)) from None


def _fraction(digits: str | None, precision: int) -> int:
    """Microseconds of ``.ffffff`` digits; finer than ``precision`` (or 6) is refused."""
    if not digits:
        return 0
    significant = digits.rstrip("0")
    if len(significant) > min(precision, 6):
        raise _Bad(f"finer than the type's precision of {min(precision, 6)} fractional digits")
    return int((significant or "0").ljust(6, "0")[:6])


def _timestamp(local: bool) -> Any:
    def parse(text: str, params: list[int]) -> dt.datetime:
        precision = params[0] if params else 6
        match = _TIMESTAMP.fullmatch(text)
        if match is None:
            raise _Bad("")
        year, month, day, hour, minute, second, fraction, offset = match.groups()
        if offset is not None and not local:
            raise _Bad("a TIMESTAMP without time zone takes no offset")
        try:
            value = dt.datetime(
                int(year), int(month), int(day), int(hour or 0), int(minute or 0),
                int(second or 0), _fraction(fraction, precision),
            )
        except ValueError as err:
            raise _Bad(str(err)) from None
        if not local:
            return value
        if offset is None:
            aware = value.astimezone()  # local time zone, as Paimon Java's default zone
        elif offset == "Z":
            aware = value.replace(tzinfo=dt.timezone.utc)
        else:
            sign = -1 if offset[0] == "-" else 1
            digits = offset[1:].replace(":", "")
            delta = dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
            aware = value.replace(tzinfo=dt.timezone(sign * delta))
        return aware.astimezone(dt.timezone.utc)

    return parse


def _time(text: str, params: list[int]) -> dt.time:
    match = _TIME_ONLY.fullmatch(text)
    if match is None:
        raise _Bad("")
    hour, minute, second, fraction = match.groups()
    try:
        return dt.time(int(hour), int(minute), int(second or 0),
                       _fraction(fraction, params[0] if params else 0))
    except ValueError as err:
        raise _Bad(str(err)) from None


_PARSERS: dict[str, Any] = {
    "CHAR": _string,
    "VARCHAR": _string,
    "STRING": _string,
    **{name: _integer(bits) for name, bits in _INT_RANGES.items()},
    "FLOAT": _floating(True),
    "REAL": _floating(True),
    "DOUBLE": _floating(False),
    "DECIMAL": _decimal,
    "NUMERIC": _decimal,
    "BOOLEAN": _boolean,
    "DATE": _date,
    "TIMESTAMP": _timestamp(False),
    "TIMESTAMP_LTZ": _timestamp(True),
    "TIME": _time,
}
_FORMATS = {
    "CHAR": "text",
    "VARCHAR": "text",
    "STRING": "text",
    **{name: "a whole number, e.g. 42" for name in _INT_RANGES},
    "FLOAT": "a number, e.g. 1.5",
    "REAL": "a number, e.g. 1.5",
    "DOUBLE": "a number, e.g. 1.5",
    "DECIMAL": "a number, e.g. 12.50",
    "NUMERIC": "a number, e.g. 12.50",
    "BOOLEAN": "true or false",
    "DATE": "yyyy-MM-dd, e.g. 2026-11-03",
    "TIMESTAMP": "yyyy-MM-dd HH:mm:ss[.ffffff], e.g. 2026-11-03 10:15:00",
    "TIMESTAMP_LTZ": (
        "yyyy-MM-dd HH:mm:ss[.ffffff][offset], e.g. 2026-11-03 10:15:00Z "
        "(no offset: the local time zone)"
    ),
    "TIME": "HH:mm:ss[.fff], e.g. 10:15:00",
}


def _table_name(table: Any) -> str | None:
    ident = getattr(table, "identifier", None)
    getter = getattr(ident, "get_full_name", None)
    return str(getter()) if getter else None
