"""What a lineage store factory is given: ``LineageMetaContext`` (the proposal's
``LineageMetaFactory.Context``).

Its own module so that the factories this package ships (``meta_factories``) and the
registry that finds factories (``meta``) both build on it without importing each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..paimon.secrets import mask_url
from .url import DEFAULT_DATABASE

if TYPE_CHECKING:  # SQLAlchemy is imported where a URL is built: see lineage/url.py
    from sqlalchemy.engine import URL


@dataclass(frozen=True)
class LineageMetaContext:
    """What a factory gets: the catalog options (secrets included), and resolved parts.

    ``options()`` is the proposal's accessor. ``url`` is the SQLAlchemy URL the
    options' ``jdbc.url`` maps to (with credentials; never log it), ``database`` the
    system database. ``retry`` is the retry policy the caller wants (or None).
    """

    option_map: Mapping[str, str] = field(default_factory=dict, repr=False)
    url: URL | str | None = field(default=None, repr=False)
    database: str = DEFAULT_DATABASE
    retry: Any = None

    def options(self) -> dict[str, str]:
        return dict(self.option_map)

    def __repr__(self) -> str:
        store = "(default store)" if self.url is None else mask_url(self.url)
        return f"LineageMetaContext(store={store}, database={self.database!r})"
