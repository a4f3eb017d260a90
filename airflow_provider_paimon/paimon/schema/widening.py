"""Which column type changes only widen (every old value reads back unchanged).

pypaimon's cast table allows any "explicit" cast for ``update column type`` (BIGINT to
INT, STRING to INT, DECIMAL(10,2) to DECIMAL(5,2)): old files are then read with a
lossy cast, silently. Here only widening changes pass:

* integers to a wider integer; TINYINT/SMALLINT to FLOAT, up to INT to DOUBLE (exact in
  the mantissa); an integer to a DECIMAL with enough integer digits;
* FLOAT to DOUBLE;
* DECIMAL(p,s) to DECIMAL(p',s') keeping at least as many integer and fraction digits;
* CHAR(n)/VARCHAR(n) to a VARCHAR of at least n (STRING is VARCHAR of the maximum);
  BINARY(n)/VARBINARY(n) to a VARBINARY of at least n (BYTES);
* TIMESTAMP(p) to TIMESTAMP(q >= p), the same for TIMESTAMP WITH LOCAL TIME ZONE.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_MAX_LEN = 2147483647
_INT_BITS = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}
_INT_DIGITS = {"TINYINT": 3, "SMALLINT": 5, "INT": 10, "BIGINT": 19}
_MANTISSA_BITS = {"FLOAT": 24, "DOUBLE": 53}


@dataclass(frozen=True)
class TypeShape:
    """An atomic Paimon type as family plus parameters (nullability left out)."""

    family: str
    p: int | None = None  # length / precision
    s: int | None = None  # scale


def shape(type_text: str) -> TypeShape:
    """Parse a Paimon atomic type string (as pypaimon stores it) into a ``TypeShape``."""
    t = re.sub(r"\s+", " ", type_text.upper().replace(" NOT NULL", "").strip())
    t = re.sub(r"\s*\(\s*", "(", t)
    t = re.sub(r"\s*,\s*", ",", t).replace(" )", ")")
    m = re.match(r"^([A-Z_]+(?: [A-Z_]+)*?)(?:\((\d+)(?:,(\d+))?\))?( WITH LOCAL TIME ZONE)?$", t)
    if not m:
        return TypeShape(t)
    base, p, s, ltz = m.group(1), m.group(2), m.group(3), m.group(4)
    p_i = int(p) if p is not None else None
    s_i = int(s) if s is not None else None
    if base == "INTEGER":
        base = "INT"
    if base in ("DEC", "NUMERIC"):
        base = "DECIMAL"
    if base == "DECIMAL":
        return TypeShape("DECIMAL", 10 if p_i is None else p_i, 0 if s_i is None else s_i)
    if base == "STRING":
        return TypeShape("VARCHAR", _MAX_LEN)
    if base in ("VARCHAR", "VARBINARY"):
        return TypeShape(base, 1 if p_i is None else p_i)
    if base in ("CHAR", "BINARY"):
        return TypeShape(base, 1 if p_i is None else p_i)
    if base == "BYTES":
        return TypeShape("VARBINARY", _MAX_LEN)
    if base == "TIMESTAMP_LTZ" or (base == "TIMESTAMP" and ltz):
        return TypeShape("TIMESTAMP_LTZ", 6 if p_i is None else p_i)
    if base in ("TIMESTAMP", "TIME"):
        return TypeShape(base, (6 if base == "TIMESTAMP" else 0) if p_i is None else p_i)
    return TypeShape(base, p_i, s_i)


def is_widening(old: str, new: str) -> bool:
    """True when every value of type ``old`` is exactly representable in ``new``."""
    a, b = shape(old), shape(new)
    if a == b:
        return True
    if a.family in _INT_BITS:
        if b.family in _INT_BITS:
            return _INT_BITS[b.family] >= _INT_BITS[a.family]
        if b.family in _MANTISSA_BITS:
            return _MANTISSA_BITS[b.family] >= _INT_BITS[a.family]
        if b.family == "DECIMAL":
            return (b.p or 0) - (b.s or 0) >= _INT_DIGITS[a.family]
        return False
    if a.family == "FLOAT":
        return b.family == "DOUBLE"
    if a.family == "DECIMAL" and b.family == "DECIMAL":
        return (b.s or 0) >= (a.s or 0) and (b.p or 0) - (b.s or 0) >= (a.p or 0) - (a.s or 0)
    if a.family in ("CHAR", "VARCHAR"):
        return b.family == "VARCHAR" and (b.p or 0) >= (a.p or 0)
    if a.family in ("BINARY", "VARBINARY"):
        return b.family == "VARBINARY" and (b.p or 0) >= (a.p or 0)
    if a.family in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return b.family == a.family and (b.p or 0) >= (a.p or 0)
    return False
