"""The one secret policy: which keys are secret, and which parts of a URL are.

Every path that logs, prints or passes on settings (catalog options, Spark conf, the
lineage store URL, OpenLineage transports, the CLI) asks this module, so a credential
one path recognises is recognised by all of them. It imports nothing but the standard
library, so every layer (``paimon``, ``lineage``, ``spark`` and the Airflow layer) can
use it.

The policy, in short:

* a **key** is secret when its name mentions a credential: ``password``/``passwd``,
  ``secret``, ``token``, ``key`` (not ``primary-key``, ``bucket-key`` and other table
  layout keys), ``credential``, ``auth`` (``Authorization``, ``oauth``...), ``cookie``,
  ``signature``; or when it is an HTTP header (pypaimon's REST ``header.*`` options,
  OpenLineage's ``...headers.*``): headers are how REST servers take credentials;
* in a **URL** the password of ``user:password@host`` is secret, however the URL is
  mistyped (``mysql+pymysql:/root:PW@h``, ``mysql+pymysql//root:PW@h``,
  ``root:PW@h``, an unencoded ``@`` inside the password), and so are the values of
  query parameters with a secret key (``?password=``, ``?api_key=``);
* a **value** is secret when its key is, or when it is a URL carrying a secret.

Anything secret is masked as ``***`` in text and, in the Airflow layer, travels to a
Spark job through the environment or a private file, never its command line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "MASK",
    "SECRET_KEY_MARKERS",
    "is_secret",
    "is_secret_key",
    "mask_mapping",
    "mask_url",
    "scrub",
    "secret_values",
    "secrets_in_text",
    "split_secrets",
]

MASK = "***"

#: Words that make a key secret wherever they appear in its (lower-cased) name.
SECRET_KEY_MARKERS = (
    "password",
    "passwd",
    "secret",
    "token",
    "key",
    "credential",
    "auth",
    "cookie",
    "signature",
)
#: Table-layout words that contain "key" but name no credential.
_NOT_SECRET = re.compile(r"(primary|bucket|partition|sort|sequence|record|row|distribution)[-._ ]?keys?")
#: A key that is (part of) an HTTP header: ``header.Authorization``, ``...headers.X-Api``.
_HEADER = re.compile(r"(^|[._-])headers?([._-]|$)")

_SCHEME = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.\-]*:)+/{1,3}|^[A-Za-z][A-Za-z0-9+.\-]*//")
_WORD_SPLIT = re.compile(r"([\s'\"<>()\[\]{},`]+)")
_QUERY_PAIR = re.compile(r"([?&;])([^=&;#\s]+)=([^&;#\s]*)")
_KEY_VALUE = re.compile(r"^(-{0,2}[A-Za-z_][\w.\-]*)([=:])(.+)$")


def is_secret_key(key: Any) -> bool:
    """True when a setting named ``key`` holds a credential (case-insensitive)."""
    lowered = str(key).strip().lower()
    if _HEADER.search(lowered):
        return True
    lowered = _NOT_SECRET.sub("", lowered)
    return any(marker in lowered for marker in SECRET_KEY_MARKERS)


def _mask_word(word: str, found: list[str]) -> str:
    """Mask the credentials inside one whitespace-free word; collect them in ``found``."""
    if "@" in word:
        scheme = _SCHEME.match(word)
        start = scheme.end() if scheme else 0
        at = word.rfind("@")
        userinfo = word[start:at]
        user, colon, secret = userinfo.partition(":")
        # a user part has no path or query characters: "h/p?mail=a@b" is not userinfo
        if colon and secret and not re.search(r"[/?#@]", user) and at > start:
            found.append(secret)
            word = word[: start + len(user) + 1] + MASK + word[at:]
    if "?" in word or ";" in word:
        def query(match: re.Match[str]) -> str:
            if is_secret_key(match.group(2)) and match.group(3) and match.group(3) != MASK:
                found.append(match.group(3))
                return f"{match.group(1)}{match.group(2)}={MASK}"
            return match.group(0)

        word = _QUERY_PAIR.sub(query, word)
    pair = _KEY_VALUE.match(word)
    if (
        pair
        and "://" not in pair.group(1)
        and is_secret_key(pair.group(1).lstrip("-"))
        and pair.group(3) != MASK
    ):
        found.append(pair.group(3))
        word = f"{pair.group(1)}{pair.group(2)}{MASK}"
    return word


def _mask(text: str) -> tuple[str, list[str]]:
    found: list[str] = []
    parts = _WORD_SPLIT.split(text)
    masked = "".join(
        part if index % 2 else _mask_word(part, found) for index, part in enumerate(parts)
    )
    return masked, found


def mask_url(url: Any) -> str:
    """``url`` as text with its password and secret query values replaced by ``***``.

    Works on any text: a well-formed URL, a mistyped one (``mysql+pymysql:/root:PW@h``,
    ``root:PW@h``) or a message that contains URLs; the rest is kept as it is.
    """
    return _mask(str(url))[0]


def secrets_in_text(text: Any) -> list[str]:
    """The secret strings that ``mask_url`` would hide in ``text``."""
    return [s for s in _mask(str(text))[1] if s]


def is_secret(key: Any, value: Any = None) -> bool:
    """True when the setting ``key=value`` must not be shown or put on a command line."""
    if is_secret_key(key):
        return True
    return isinstance(value, str) and bool(secrets_in_text(value))


def mask_mapping(values: Mapping[Any, Any]) -> dict[Any, Any]:
    """A copy of ``values`` safe to log: secret values ``***``, URLs masked, nested too."""
    out: dict[Any, Any] = {}
    for key, value in values.items():
        if isinstance(value, Mapping):
            out[key] = MASK if is_secret_key(key) else mask_mapping(value)
        elif value is not None and value != "" and is_secret_key(key):
            out[key] = MASK
        elif isinstance(value, str):
            out[key] = mask_url(value)
        else:
            out[key] = value
    return out


def split_secrets(values: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(public, secret)``: the settings safe for a command line, and the others."""
    public: dict[str, Any] = {}
    secret: dict[str, Any] = {}
    for key, value in values.items():
        (secret if is_secret(key, value if isinstance(value, str) else str(value)) else public)[key] = value
    return public, secret


def secret_values(values: Any) -> list[str]:
    """Every secret string inside ``values`` (a mapping, nested or not, or a text).

    For scrubbing messages and registering with a log masker: whole values of secret
    keys, and the passwords / secret query values inside URL-like values.
    """
    found: list[str] = []
    if isinstance(values, Mapping):
        for key, value in values.items():
            if isinstance(value, Mapping):
                found.extend(secret_values(value))
            elif value is None or value == "":
                continue
            elif is_secret_key(key):
                found.append(str(value))
            else:
                found.extend(secrets_in_text(value))
    elif values is not None:
        found.extend(secrets_in_text(values))
    return sorted({s for s in found if s}, key=len, reverse=True)


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every one of ``secrets`` (longest first) replaced by ``***``, then
    any URL credential left in it masked too."""
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return mask_url(text)
