"""Passwords an attacker would choose: the full printable ASCII range and Unicode punctuation.

Shared by the policy's fuzz test (tests/paimon/test_secrets_fuzz.py) and the real-run
test that looks for them in Airflow's metadata database, argv, logs, table files and
OpenLineage events (tests/sensors/test_secrets_in_metadata_db.py).
"""

from __future__ import annotations

import random
import string
import unicodedata

ASCII = [c for c in string.printable if not c.isspace()]
UNICODE_PUNCTUATION = [
    chr(cp) for cp in range(0xA1, 0x3000)
    if unicodedata.category(chr(cp)).startswith(("P", "S")) and not chr(cp).isspace()
]


def fuzz_password(rng: random.Random, *, spaces: bool = False, ascii_only: bool = False) -> str:
    """A password of 12-28 characters with a fixed core (``Pw`` ... ``9z``), so it differs
    from the text around it; ``ascii_only`` for places that take no Unicode (HTTP headers)."""
    alphabet = ASCII if ascii_only else ASCII + UNICODE_PUNCTUATION[:: rng.randint(1, 7)]
    chars = [rng.choice(alphabet) for _ in range(rng.randint(8, 24))]
    if spaces:
        chars.insert(rng.randint(1, len(chars) - 1), " ")
    # a password must differ from the text around it to be found at all: give it a core
    return "Pw" + "".join(chars) + "9z"
