"""The secret fuzz test's password generator (``secret_fuzz.fuzz_password``), for
tests in other folders: passwords from printable ASCII and Unicode punctuation, each
starting ``Pw`` and ending ``9z`` so that a part of one is recognisable in output."""

from __future__ import annotations

import json
import random
from urllib.parse import quote

from secret_fuzz import fuzz_password


def passwords(seed: int, count: int) -> list[str]:
    """``count`` passwords of the fuzz generator, reproducible from ``seed``."""
    rng = random.Random(seed)
    return [fuzz_password(rng) for _ in range(count)]


def shown(text: str, secrets: list[str]) -> list[str]:
    """The secrets ``text`` shows, whole (as is, URL-encoded, JSON- or repr-escaped) or in
    part: a message that cut a password at a ``/`` or ``,`` still shows its first six
    characters ("Pw" and four more) or its last six."""
    found = []
    for secret in secrets:
        forms = {secret, quote(secret, safe=""), json.dumps(secret)[1:-1], repr(secret)[1:-1]}
        if any(form in text for form in forms) or secret[:6] in text or secret[-6:] in text:
            found.append(secret)
    return found
