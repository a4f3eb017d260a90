"""The one secret policy: secrets known by where they came from, and a second net.

Every path that logs, prints or passes on settings (catalog options, Spark conf, the
lineage store URL, OpenLineage transports, the CLI) asks this module. It imports
nothing but the standard library, so every layer (``paimon``, ``lineage``, ``spark``
and the Airflow layer) can use it.

**First net: secrets known by origin.** A value is secret because of where it came
from: a connection's password, a catalog option delivered through the private
environment of a job, the password of a URL the package parsed. Whoever reads such a
value calls ``register_secret`` (or ``register_url_secrets`` for a URL) with the
**whole value**; from then on every text this module masks (``mask_url``, ``scrub``,
``mask_mapping``...) has that value replaced by ``***`` wherever it appears, whatever
punctuation it holds, in its URL-encoded, JSON-escaped and ``repr`` forms too. The
Airflow layer subscribes Airflow's secrets masker (``on_secret_registered``), so what
the package knows, Airflow's log and rendered-field redaction know too.

**Second net: how a secret looks.** For text whose secrets nobody registered (a URL a
user typed, a driver's error message):

* a **key** is secret when its name mentions a credential: ``password``/``passwd``/
  ``pwd``/``pass``, ``passphrase``, ``secret``, ``token``/``tok``, ``key`` (not
  ``primary-key``, ``bucket-key`` and other table layout keys), ``credential``,
  ``auth`` (``Authorization``, ``oauth``...), ``bearer``, ``cookie``, ``signature``,
  ``dsn``; or when it is an HTTP header (pypaimon's REST ``header.*`` options,
  OpenLineage's ``...headers.*``): headers are how REST servers take credentials;
* in a **URL** the user info ``user:password@`` is found by parsing the URL (its
  authority ends at the last ``@`` before the host), never by splitting text into
  words, so a password holding ``,`` ``(`` ``'`` ``@`` or ``/`` is found whole; a URL
  whose user info cannot be parsed cleanly (``mysql+pymysql//root:PW@h``,
  ``root:PW@h``) has its whole user info masked; the values of query parameters with a
  secret key (``?password=``, ``?api_key=``) are secret;
* ``key=value``, ``key: value`` and quoted ``'key': 'value'`` pairs with a secret key
  have their whole value masked (to the end of the quoted value or of the word).

Anything secret is masked as ``***`` in text and, in the Airflow layer, travels to a
Spark job through the environment or a private file, never its command line.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import quote, quote_plus, unquote, unquote_plus, urlsplit

__all__ = [
    "MASK",
    "MIN_SECRET_LENGTH",
    "SECRET_KEY_MARKERS",
    "ScrubFilter",
    "is_secret",
    "is_secret_key",
    "known_secrets",
    "mask_mapping",
    "mask_url",
    "on_secret_registered",
    "register_secret",
    "register_secret_options",
    "register_secret_values",
    "register_url_secrets",
    "scrub",
    "scrub_loggers",
    "secret_values",
    "secrets_in_text",
    "split_secrets",
    "split_userinfo",
    "strip_userinfo",
    "url_userinfo_secrets",
]

MASK = "***"
#: Registered values shorter than this are not replaced everywhere in a text (a
#: three-letter secret would mangle every message); the second net still masks them
#: where they stand as a password, a query value or a secret key's value.
MIN_SECRET_LENGTH = 4

#: Words that make a key secret wherever they appear in its (lower-cased) name.
SECRET_KEY_MARKERS = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "key",
    "credential",
    "auth",
    "bearer",
    "cookie",
    "signature",
)
#: Short words that make a key secret when they are a whole segment of its name
#: (``jdbc.pass``, ``rest.client.pwd``, ``session-tok``, ``dsn``), but not inside other
#: words (``bypass``, ``stock``).
SECRET_KEY_SEGMENTS = frozenset({"pass", "pwd", "pw", "tok", "dsn", "jwt", "sas", "pat"})
#: Table-layout words that contain "key" but name no credential.
_NOT_SECRET = re.compile(r"(primary|bucket|partition|sort|sequence|record|row|distribution)[-._ ]?keys?")
#: A key that is (part of) an HTTP header: ``header.Authorization``, ``...headers.X-Api``.
_HEADER = re.compile(r"(^|[._-])headers?([._-]|$)")
_SEGMENTS = re.compile(r"[^a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")

# -- first net: the registry of secrets known by origin ---------------------------------

_lock = threading.Lock()
_known: set[str] = set()
_listeners: list[Callable[[str], None]] = []
_pattern: re.Pattern[str] | None = None


def _forms(value: str) -> set[str]:
    """The ways ``value`` shows up in text: as is, URL-encoded or -decoded, JSON-escaped
    (a log of a JSON document), and inside a Python ``repr``."""
    forms = {value, quote(value, safe=""), quote_plus(value, safe=""), unquote(value),
             unquote_plus(value), json.dumps(value)[1:-1], repr(value)[1:-1]}
    return {form for form in forms if form.strip()}


def register_secret(value: Any) -> None:
    """Know ``value`` as a secret from now on, by its whole value (and its encodings).

    Call it where a value is read from a secret origin: a connection's password, a
    credential option, a private environment variable. Blank values are ignored. The
    listeners (Airflow's secrets masker, in the Airflow layer) hear of each new form.
    """
    global _pattern
    if value is None:
        return
    text = str(value)
    if not text.strip():
        return
    forms = _forms(text)
    with _lock:
        new = forms - _known
        if not new:
            return
        _known.update(new)
        _pattern = None
        listeners = list(_listeners)
    for listener in listeners:
        for form in sorted(new):
            listener(form)


def register_secret_values(values: Iterable[Any]) -> None:
    """``register_secret`` for each of ``values``."""
    for value in values:
        register_secret(value)


def register_url_secrets(url: Any) -> list[str]:
    """Register the secrets of one URL (its password, secret query values; the whole
    user info when it does not parse cleanly) and return them."""
    found = url_userinfo_secrets(url)
    register_secret_values(found)
    return found


def register_secret_options(options: Mapping[Any, Any]) -> list[str]:
    """Register the secrets of settings read from a secret origin and return them.

    For a connection's options, a job's private environment, a transport config: the
    whole value of every setting the policy holds secret (``is_secret``: a credential
    key, or a value holding URL credentials or a known secret) and the credentials
    inside every URL value. A plain setting (``metastore=rest``, ``file.format=orc``) is
    not registered, so its value is not masked all over the logs (nor refused as a
    table option's value).
    """
    found: list[str] = []
    for key, value in options.items():
        if isinstance(value, Mapping):
            if is_secret_key(key):
                found.extend(str(v) for v in value.values() if v not in (None, ""))
            found.extend(register_secret_options(value))
            continue
        if value is None or value == "":
            continue
        text = str(value)
        if is_secret(key, text):
            found.append(text)
            scheme = _AUTH_SCHEME.match(text)
            if scheme:  # "Bearer <token>": the token alone shows up in text too
                found.append(scheme.group(1))
        found.extend(url_userinfo_secrets(text))
    register_secret_values(found)
    return found


def on_secret_registered(listener: Callable[[str], None]) -> None:
    """Call ``listener`` with every secret known now and every one registered later.

    The Airflow layer passes Airflow's ``mask_secret``, so a secret the package learns
    anywhere in a task process is redacted from its logs and rendered fields as well.
    """
    with _lock:
        if listener in _listeners:
            return
        _listeners.append(listener)
        known = sorted(_known)
    for value in known:
        listener(value)


def known_secrets() -> frozenset[str]:
    """Every registered secret (in all its forms)."""
    with _lock:
        return frozenset(_known)


def _known_pattern() -> re.Pattern[str] | None:
    global _pattern
    with _lock:
        if _pattern is None:
            long_enough = sorted((s for s in _known if len(s) >= MIN_SECRET_LENGTH), key=len, reverse=True)
            _pattern = re.compile("|".join(map(re.escape, long_enough))) if long_enough else None
        return _pattern


def _mask_known(text: str, extra: Iterable[str] = ()) -> str:
    pattern = _known_pattern()
    if pattern is not None:
        text = pattern.sub(MASK, text)
    # as for registered ones: a short secret is masked by the second net where it stands
    # as a password, not in every word that contains it ("1" in "127.0.0.1")
    for secret in sorted({s for s in extra if s and len(s) >= MIN_SECRET_LENGTH}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


# -- second net: keys ---------------------------------------------------------------------


def is_secret_key(key: Any) -> bool:
    """True when a setting named ``key`` holds a credential (case-insensitive)."""
    raw = str(key).strip()
    lowered = raw.lower()
    if _HEADER.search(lowered):
        return True
    segments = set(_SEGMENTS.split(_CAMEL.sub("-", raw).lower()))
    if segments & SECRET_KEY_SEGMENTS:
        return True
    lowered = _NOT_SECRET.sub("", lowered)
    return any(marker in lowered for marker in SECRET_KEY_MARKERS)


# -- second net: URLs ---------------------------------------------------------------------

#: ``scheme://``, and the mistyped ``scheme:/`` and ``scheme//`` forms.
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*(?:://?|//)")
#: what may follow the ``@`` of user info: a host (name, IPv4, [IPv6]) and a port
_HOST_AFTER_AT = re.compile(r"@(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-._~%]+)(?::[^/?#@\s'\"),;\]}>|]*)?(?=$|[/?#'\"),;\]}>|\s])")
#: characters that open a quoted or bracketed word: they are never part of a URL
_OPENERS = "'\"([{<`"
_CLOSERS = "'\")]}>`"
_GOOD_AUTHORITY = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-._~%]+)(:[0-9]*)?")
_QUERY_PAIR = re.compile(r"([?&;])([^=&;#\s]+)=([^&;#\s]*)")
_KEY_VALUE = re.compile(r"^(-{0,2}[A-Za-z_][\w.\-]*)([=:])(.+)$")
_QUOTED_PAIR = re.compile(
    r"""(?P<kq>["'])(?P<key>[^"'\n]{1,200})(?P=kq)\s*[:=]\s*(?P<vq>["'])(?P<value>.*?)(?P=vq)(?=\s*(?:[,}\])]|$))""",
    re.DOTALL,
)
#: ``key: value`` / ``key = value`` with blanks around the separator (a log line, YAML)
_SPACED_PAIR = re.compile(r"(?<![\w.\-])([A-Za-z_][\w.\-]*)(\s*[:=]\s+|\s+[:=]\s*)(?!\s)(\S+)")
#: the credential of an HTTP ``Authorization`` value (``Bearer <token>``)
_AUTH_SCHEME = re.compile(r"(?i)^\s*(?:bearer|basic|token|digest|negotiate|apikey)\s+(\S.*?)\s*$")
#: an HTTP credential written out: ``Authorization: Bearer abc...``, ``Basic dXNl...``
_HEADER_VALUE = re.compile(r"(?i)\b(bearer|basic)(\s+)([A-Za-z0-9\-._~+/]{8,}=*)")


def _userinfo_span(word: str) -> tuple[int, int, bool] | None:
    """Where user info sits in one whitespace-free word: ``(start, end, clean)``, or None.

    ``end`` is the index of the ``@`` that ends it: the last ``@`` followed by a host,
    so an unencoded ``@`` or ``,`` inside a password stays inside. ``clean`` is True
    when the standard URL parser reads the same user info out of the URL (then the
    user name may be shown); otherwise the whole user info is a secret.
    """
    ats = [m.start() for m in _HOST_AFTER_AT.finditer(word)]
    if not ats:
        return None
    at = ats[-1]
    scheme = None
    for match in _SCHEME.finditer(word, 0, at):
        scheme = match
    start = scheme.end() if scheme is not None else len(word) - len(word.lstrip(_OPENERS))
    userinfo = word[start:at]
    if at <= start or ":" not in userinfo:
        return None  # no user info, or a user name only ("bob@example.com")
    if scheme is not None:
        authority = re.split(r"[/?#]", word[start:], maxsplit=1)[0]
        if "@" not in authority and _GOOD_AUTHORITY.fullmatch(authority):
            return None  # a good host:port, and the '@' belongs to the path or query
    clean = False
    if scheme is not None and scheme.group(0).endswith("://"):
        try:
            parts = urlsplit(word[scheme.start():].rstrip(_CLOSERS))
            clean = parts.password is not None and f"{parts.username}:{parts.password}" == userinfo
        except ValueError:
            clean = False
    return start, at, clean


def _mask_word(word: str, found: list[str]) -> str:
    """Mask the credentials inside one whitespace-free word; collect them in ``found``."""
    span = _userinfo_span(word)
    if span is not None:
        start, at, clean = span
        userinfo = word[start:at]
        user, _, password = userinfo.partition(":")
        if clean:
            found.append(password)
            word = word[:start] + user + ":" + MASK + word[at:]
        else:
            found.append(userinfo)
            if password:
                found.append(password)
            word = word[:start] + MASK + word[at:]
    if "?" in word or ";" in word or "&" in word:
        def query(match: re.Match[str]) -> str:
            if is_secret_key(match.group(2)) and match.group(3) and match.group(3) != MASK:
                found.append(match.group(3))
                found.append(unquote(match.group(3)))
                return f"{match.group(1)}{match.group(2)}={MASK}"
            return match.group(0)

        word = _QUERY_PAIR.sub(query, word)
    pair = _KEY_VALUE.match(word.lstrip(_OPENERS))
    if (
        pair
        and "://" not in pair.group(1)
        and is_secret_key(pair.group(1).lstrip("-"))
        and pair.group(3) != MASK
        and not pair.group(3).startswith(MASK)
    ):
        lead = len(word) - len(word.lstrip(_OPENERS))
        found.append(pair.group(3))
        word = f"{word[:lead]}{pair.group(1)}{pair.group(2)}{MASK}"
    return word


def _mask(text: str) -> tuple[str, list[str]]:
    found: list[str] = []

    def quoted(match: re.Match[str]) -> str:
        value = match.group("value")
        if is_secret_key(match.group("key")) and value and value != MASK:
            found.append(value)
            start, end = match.span("value")
            offset = match.start()
            whole = match.group(0)
            return whole[: start - offset] + MASK + whole[end - offset:]
        return match.group(0)

    text = _QUOTED_PAIR.sub(quoted, text)

    def header(match: re.Match[str]) -> str:
        if match.group(3) == MASK or match.group(3).startswith(MASK):
            return match.group(0)
        found.append(match.group(3))
        return f"{match.group(1)}{match.group(2)}{MASK}"

    text = _HEADER_VALUE.sub(header, text)

    def spaced(match: re.Match[str]) -> str:
        value = match.group(3)
        if not is_secret_key(match.group(1)) or value.startswith(MASK) or value.strip(_OPENERS + _CLOSERS).startswith(MASK):
            return match.group(0)
        found.append(value)
        return f"{match.group(1)}{match.group(2)}{MASK}"

    text = _SPACED_PAIR.sub(spaced, text)
    parts = re.split(r"(\s+)", text)
    masked = "".join(part if index % 2 else _mask_word(part, found) for index, part in enumerate(parts))
    return masked, found


def split_userinfo(url: Any) -> tuple[str | None, str]:
    """``(user info, url without it)``: ``scheme://user:pw@host/p`` -> ``("user:pw", "scheme://host/p")``.

    The user info is found as the second net finds it: its ``@`` is the last one
    followed by a host, so ``/``, ``?``, ``#``, ``,`` or ``@`` inside a password do not
    cut it short (``urllib`` would end the authority at the first ``/``). A user name
    alone (``file://u@host/share``) is user info too. ``(None, url)`` without any.
    """
    text = str(url or "")
    span = _userinfo_span(text)
    if span is not None:
        start, at, _clean = span
        return text[start:at], text[:start] + text[at + 1:]
    scheme = _SCHEME.match(text)
    if scheme is None:
        return None, text
    authority = re.split(r"[/?#]", text[scheme.end():], maxsplit=1)[0]
    if "@" not in authority:
        return None, text
    at = scheme.end() + authority.rindex("@")
    return text[scheme.end():at], text[: scheme.end()] + text[at + 1:]


def strip_userinfo(url: Any) -> str:
    """``url`` without its user info (``split_userinfo``), for names that must never
    carry credentials: OpenLineage namespaces, descriptions of a destination."""
    return split_userinfo(url)[1]


def url_userinfo_secrets(url: Any) -> list[str]:
    """The secret parts of one URL (or any text): passwords, unparsable user info,
    secret query values, as written and URL-decoded (longest first).

    A secret holding ``/``, ``?`` or ``#`` comes with its part before that character
    too: that is where ``urllib`` (and every HTTP client built on it) ends the
    authority, so their errors quote the password cut there (``Failed to parse:
    'svc:Pw,(x)' is not a valid host``); registered, that part is masked as well.
    """
    found: list[str] = []
    for secret in _mask(str(url or ""))[1]:
        for form in (secret, unquote(secret)):
            cut = _URLLIB_CUT.split(form, maxsplit=1)[0]
            for part in (form, cut if len(cut) >= MIN_SECRET_LENGTH else ""):
                if part and part != MASK and part not in found:
                    found.append(part)
    return sorted(found, key=len, reverse=True)


#: where urllib ends a URL's authority (so a password holding one is cut there)
_URLLIB_CUT = re.compile(r"[/?#]")


def mask_url(url: Any) -> str:
    """``url`` as text with every registered secret and its credentials replaced by ``***``.

    Works on any text: a well-formed URL, a mistyped one (``mysql+pymysql:/root:PW@h``,
    ``root:PW@h``) or a message that contains URLs; the rest is kept as it is. A
    SQLAlchemy ``URL`` is rendered with its password first (its ``str`` hides the
    password but not secret query values), then masked like any text.
    """
    render = getattr(url, "render_as_string", None)
    text = render(hide_password=False) if callable(render) else str(url)
    return _mask(_mask_known(text))[0]


def secrets_in_text(text: Any) -> list[str]:
    """The secret strings that the second net finds in ``text`` (not the registered ones)."""
    return [s for s in _mask(str(text))[1] if s and s != MASK]


def is_secret(key: Any, value: Any = None) -> bool:
    """True when the setting ``key=value`` must not be shown or put on a command line."""
    if is_secret_key(key):
        return True
    if not isinstance(value, str) or not value:
        return False
    return bool(secrets_in_text(value)) or _mask_known(value) != value


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
                found.extend(url_userinfo_secrets(value))
    elif values is not None:
        found.extend(url_userinfo_secrets(values))
    return sorted({s for s in found if s}, key=len, reverse=True)


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every registered secret and every one of ``secrets`` (longest
    first) replaced by ``***``, then any credential the second net finds masked too."""
    return _mask(_mask_known(str(text), secrets))[0]


class ScrubFilter(logging.Filter):
    """A log filter that scrubs each record's message, exception text and stack.

    The message is rendered (``msg % args``) and scrubbed as a whole, so a secret split
    across arguments or quoted by ``%r`` is still found; the exception text is rendered
    once here (handlers reuse ``record.exc_text``) and scrubbed.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad format string: keep what there is
            message = f"{record.msg} {record.args!r}"
        record.msg, record.args = scrub(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = scrub(record.exc_text)
        if record.stack_info:
            record.stack_info = scrub(record.stack_info)
        return True


_LOGGER_SCRUBBER = ScrubFilter()


def scrub_loggers(*names: str) -> None:
    """Scrub every record the loggers ``names`` create, before any handler sees it.

    For libraries the package hands secrets to (openlineage-python logs its transport's
    URL and headers at DEBUG): a filter on the logger itself works wherever the record
    goes, whoever configured the handlers. Idempotent.
    """
    for name in names:
        logger = logging.getLogger(name)
        if _LOGGER_SCRUBBER not in logger.filters:
            logger.addFilter(_LOGGER_SCRUBBER)
