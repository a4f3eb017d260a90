"""Secrets that arrive through templated fields: find them, mask them, keep them out of triggers.

Two places in Airflow's metadata database outlive a task and are readable by far more
people than the DAG's author:

* ``rendered_task_instance_fields``: the task process renders the templated fields and
  sends them, redacted by the secrets masker, *before* ``pre_execute``/``execute``
  run (task SDK ``_prepare`` -> ``_serialize_rendered_fields``). Every UI user with
  access to the DAG sees them on the "Rendered Template" tab. A ``lineage_url`` taken
  from a Variable is not known to the masker, so it would be stored in clear;
  ``MaskRenderedSecrets`` registers its password (and secret catalog options) with the
  masker as soon as the fields are rendered, so the stored copy shows ``***``.
* the ``trigger`` table: a deferrable task's trigger arguments are stored as the
  worker sends them, unencrypted (Airflow 3.3). ``trigger_secret_problems`` names
  every argument that would carry a secret there, so a trigger can refuse them.

What counts as secret is the package's one secret policy (``paimon/secrets.py``): a
URL's password and secret query values, a catalog option whose key names a credential
(``password``, ``secret``, ``token``, ``key``, ``auth``, ``header.*``...) or whose
value is a URL carrying one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote

from airflow_provider_paimon.paimon.secrets import is_secret, secret_values, secrets_in_text


def secret_option_keys(options: Mapping[str, Any] | None) -> list[str]:
    """The keys of ``options`` whose values are secrets (sorted)."""
    return sorted(
        str(k) for k, v in (options or {}).items()
        if v not in (None, "") and is_secret(str(k), v if isinstance(v, str) else str(v))
    )


def url_secrets(url: Any) -> list[str]:
    """The secret parts of a URL (password, secret query values), as written and decoded."""
    out: list[str] = []
    for secret in secrets_in_text(str(url or "").strip()):
        for form in (secret, unquote(secret)):
            if form and form not in out:
                out.append(form)
    return out


def url_has_secret(url: Any) -> bool:
    """True when ``url`` carries a password or secret query value, or is no SQLAlchemy URL
    at all (then nobody can tell what part of it is a password)."""
    text = str(url or "").strip()
    if not text:
        return False
    if url_secrets(text):
        return True
    try:
        from sqlalchemy.engine import make_url

        make_url(text)
    except Exception:  # noqa: BLE001 - unparsable: cannot tell, so assume the worst
        return True
    return False


def trigger_secret_problems(check: dict[str, Any]) -> list[str]:
    """What in the check's arguments is a secret that must not be serialized (empty: none).

    Never echoes the secret: each entry names the argument (and the option keys).
    """
    problems = []
    if url_has_secret(check.get("lineage_url")):
        problems.append("lineage_url carries a password (or cannot be parsed)")
    keys = secret_option_keys(check.get("warehouse_options"))
    if keys:
        problems.append(f"warehouse_options holds secrets ({', '.join(keys)})")
    if secrets_in_text(str(check.get("warehouse") or "")):
        problems.append("the warehouse URI carries credentials")
    return problems


def refuse_secrets_message(problems: list[str]) -> str:
    """The error for a deferral whose trigger would store secrets, and how to fix it."""
    return (
        f"cannot defer: {'; '.join(problems)}. Airflow stores trigger arguments unencrypted "
        "in its metadata database, so a deferrable catch-up wait takes secrets from "
        "connections only: put the store URL in a 'paimon_lineage' connection "
        "(lineage_conn_id) and catalog credentials in a 'paimon' connection "
        "(paimon_conn_id), or wait on a worker with deferrable=False"
    )


def mask_values(values: Iterable[Any]) -> None:
    """Register each non-blank value with Airflow's secrets masker."""
    from airflow.sdk.log import mask_secret

    for value in values:
        if value is not None and str(value).strip():
            mask_secret(str(value))


def mask_url(url: Any) -> None:
    """Mask a URL's secrets, and the whole URL when it has any (a short password may be
    below the masker's minimum length, the URL never is)."""
    secrets = url_secrets(url)
    if secrets:
        mask_values([*secrets, str(url).strip()])


def mask_options(options: Any) -> None:
    """Mask the secrets in a mapping of catalog options (secret keys' values, URL passwords)."""
    if isinstance(options, Mapping):
        mask_values(secret_values(options))


class MaskRenderedSecrets:
    """Operator mixin: mask secrets of templated fields right after they are rendered.

    Set ``secret_url_fields`` (fields holding a SQLAlchemy URL) and
    ``secret_option_fields`` (fields holding a mapping of catalog options). The mask is
    registered in ``_do_render_template_fields``, which both plain and mapped
    (``.expand()``) tasks go through, and which runs before the task SDK stores the
    rendered fields: so they are stored redacted.
    """

    secret_url_fields: tuple[str, ...] = ()
    secret_option_fields: tuple[str, ...] = ()

    def _do_render_template_fields(self, parent: Any, *args: Any, **kwargs: Any) -> None:
        super()._do_render_template_fields(parent, *args, **kwargs)  # type: ignore[misc]  # a mixin: the operator class has it
        if parent is self:
            self.mask_rendered_secrets()

    def mask_rendered_secrets(self) -> None:
        """Register the secrets the (rendered) fields hold with the secrets masker."""
        for name in self.secret_url_fields:
            mask_url(getattr(self, name, None))
        for name in self.secret_option_fields:
            mask_options(getattr(self, name, None))
