"""Secrets that arrive through templated fields: refuse them where they do not belong,
mask the rest, keep them out of triggers.

Three places in Airflow's metadata database outlive a task and are readable by far more
people than the DAG's author:

* ``serialized_dag``: every templated field's *literal* value (what the DAG file says)
  is stored as written. So a location field (``warehouse``, ``lineage_url``, and the
  values of ``conf`` / ``warehouse_options``) holding a URL with credentials, or an
  option whose key names a credential holding a literal value, is refused when the DAG
  is parsed (``check_literal_locations``): credentials come from connections, or from a
  Variable template rendered at run time.
* ``rendered_task_instance_fields``: the task process renders the templated fields and
  sends them, redacted by the secrets masker, *before* ``pre_execute``/``execute``
  run (task SDK ``_prepare`` -> ``_serialize_rendered_fields``). Every UI user with
  access to the DAG sees them on the "Rendered Template" tab. ``MaskRenderedSecrets``
  parses each rendered URL / options / argument field with the policy's parser and
  registers what it finds with the package's registry (so Airflow's masker) before
  that, and refuses a rendered location URL that carries credentials; the task fails
  before any rendered field is stored.
* the ``trigger`` table: a deferrable task's trigger arguments are stored as the
  worker sends them, unencrypted (Airflow 3.3). ``trigger_secret_problems`` names
  every argument that would carry a secret there, so a trigger can refuse them.

Before rendering, a location template that reads what whoever triggers the DAG chooses
(``params``, ``dag_run``...) is refused unless the task says
``allow_location_from_params=True`` (``location_sources.py``).

What counts as secret is the package's one secret policy (``paimon/secrets.py``): values
registered by origin, a URL's password and secret query values, a catalog option whose
key names a credential (``password``, ``secret``, ``token``, ``key``, ``auth``,
``header.*``...) or whose value is a URL carrying one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar
from urllib.parse import unquote

from airflow.sdk import BaseOperator

from airflow_provider_paimon.common.connection_secrets import (
    CredentialsInLocationError,
    check_location,
)
from airflow_provider_paimon.common.location_sources import location_conf_keys, untrusted_sources
from airflow_provider_paimon.common.secret_masking import is_flag_value, register_values
from airflow_provider_paimon.common.templating import is_templated
from airflow_provider_paimon.paimon.secrets import (
    is_secret,
    is_secret_key,
    register_secret,
    register_url_secrets,
    secret_values,
    secrets_in_text,
)


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
    """Register each non-blank value (flags excepted) with the package's secret registry,
    which Airflow's masker hears."""
    register_values(v for v in values if v is not None and str(v).strip())


def register_url_masks(url: Any) -> None:
    """Register a URL's secrets, and the whole URL when it has any (a short password may
    be below the masker's minimum length, the URL never is)."""
    secrets = register_url_secrets(str(url or "").strip())
    if secrets:
        register_secret(str(url).strip())


def mask_options(options: Any) -> None:
    """Register the secrets in a mapping of options (secret keys' values, URL credentials)."""
    if isinstance(options, Mapping):
        mask_values(secret_values(options))


def mask_texts(values: Any) -> None:
    """Register the credentials inside each text of a list (command-line arguments)."""
    if isinstance(values, (list, tuple)):
        for value in values:
            if isinstance(value, str):
                register_url_secrets(value)


#: key words that name a credential beyond doubt (not the bare ``key`` / ``auth`` of
#: ``spark.authenticate`` or ``spark.ssl.keyStore``)
_CREDENTIAL_KEY = re.compile(
    r"(?i)(password|passwd|passphrase|secret|token|api[-_.]?key|credential|bearer|authorization|"
    r"cookie|signature|(^|[._-])headers?([._-]|$)|(^|[._-])(pass|pwd|pw|tok|dsn|jwt|sas|pat)([._-]|$))"
)


def is_credential_key(key: Any) -> bool:
    """True when an option named ``key`` can only hold a credential."""
    return is_secret_key(key) and bool(_CREDENTIAL_KEY.search(str(key)))


def literal_credential_keys(options: Any) -> list[str]:
    """The keys of ``options`` that hold a literal (not templated) credential (sorted)."""
    if not isinstance(options, Mapping):
        return []
    return sorted(
        str(k) for k, v in options.items()
        if is_credential_key(k) and v not in (None, "") and not is_templated(v) and not is_flag_value(v)
    )


class MaskRenderedSecrets(BaseOperator):
    """Operator base: no credentials in the DAG's literals, masked rendered fields, and no
    location templated from what a DAG's triggerer chooses.

    A ``BaseOperator`` (put it first among the bases) so that Airflow knows
    ``allow_location_from_params`` as an argument of every operator built on it, mapped
    ones (``.partial()``) too.

    Set ``secret_url_fields`` (fields holding a URL: ``warehouse``, ``lineage_url``),
    ``secret_option_fields`` (mappings: ``warehouse_options``, ``conf``) and
    ``secret_text_fields`` (lists of texts: ``application_args``). The operator calls
    ``check_literal_locations()`` at the end of its ``__init__``. The masks are
    registered in ``_do_render_template_fields``, which both plain and mapped
    (``.expand()``) tasks go through and which runs before the task SDK stores the
    rendered fields: so they are stored redacted.

    :param allow_location_from_params: let ``warehouse``, ``warehouse_options``,
        ``lineage_url`` and the location entries of ``conf`` be templated from
        ``params`` / ``dag_run`` (what whoever triggers the DAG chooses). Default
        ``False``: such a template fails the task before it is rendered
        (docs/security.md, "Who chooses where the package writes").
    """

    secret_url_fields: ClassVar[tuple[str, ...]] = ()
    secret_option_fields: ClassVar[tuple[str, ...]] = ()
    secret_text_fields: ClassVar[tuple[str, ...]] = ()
    #: fields whose template may not read params (``conf``: only its location entries)
    location_fields: ClassVar[tuple[str, ...]] = ("warehouse", "warehouse_options", "lineage_url", "conf")

    def __init__(self, *, allow_location_from_params: bool = False, **kwargs: Any) -> None:
        if not isinstance(allow_location_from_params, bool):
            raise ValueError(
                f"allow_location_from_params must be True or False, got {allow_location_from_params!r}"
            )
        super().__init__(**kwargs)
        self.allow_location_from_params = allow_location_from_params

    # -- when the DAG is parsed ---------------------------------------------------------

    def check_literal_locations(self) -> None:
        """Refuse credentials written into the DAG (they would be stored in the serialized
        DAG): URLs with credentials in location fields, literal credential options."""
        where = str(getattr(self, "task_id", "") or type(self).__name__)
        for name in (*self.secret_url_fields, *self.secret_option_fields):
            value = getattr(self, name, None)
            if isinstance(value, Mapping):
                check_location(name, {k: v for k, v in value.items() if not is_templated(v)}, where)
                keys = literal_credential_keys(value)
                if keys:
                    raise CredentialsInLocationError(
                        f"{where}: {name} holds a credential written into the DAG (key {', '.join(keys)}); "
                        "Airflow stores and shows DAG literals: take it from a connection, or template "
                        "it from a Variable ('{{ var.value.NAME }}')"
                    )
            elif isinstance(value, str) and not is_templated(value):
                check_location(name, value, where)

    # -- when the task renders ----------------------------------------------------------

    def _do_render_template_fields(self, parent: Any, template_fields: Any, context: Any, jinja_env: Any,
                                   *args: Any, **kwargs: Any) -> None:
        if parent is self:
            self.refuse_locations_from_params(template_fields, jinja_env)
        super()._do_render_template_fields(parent, template_fields, context, jinja_env, *args, **kwargs)
        if parent is self:
            self.mask_rendered_secrets()
            self.refuse_rendered_credentials()

    def refuse_locations_from_params(self, template_fields: Any, jinja_env: Any) -> None:
        """Fail when a location field's template reads what a DAG's triggerer chooses."""
        if getattr(self, "allow_location_from_params", False):
            return
        from airflow.sdk.exceptions import AirflowFailException

        dag = self.dag if self.has_dag() else None
        trusted = list((getattr(dag, "user_defined_macros", None) or {}).keys())
        fields = set(template_fields or ())
        for name in self.location_fields:
            if name not in fields:
                continue
            value = getattr(self, name, None)
            if name == "conf":
                value = location_conf_keys(value)
            try:
                sources = untrusted_sources(value, jinja_env, trusted)
            except Exception as err:  # noqa: BLE001 - a template that does not parse: refused
                raise AirflowFailException(f"{self._where()}: {name} is not a valid template ({type(err).__name__})") from None
            if sources:
                raise AirflowFailException(
                    f"{self._where()}: {name} is templated from {', '.join(sources)}, which whoever triggers "
                    "the DAG can choose; only DAG code, connections and Variables name where the package "
                    "reads and writes. Take it from a connection (paimon_conn_id / lineage_conn_id) or a "
                    "Variable, or set allow_location_from_params=True on the task to accept it"
                )

    def mask_rendered_secrets(self) -> None:
        """Register the secrets the (rendered) fields hold with the package's registry."""
        for name in self.secret_url_fields:
            register_url_masks(getattr(self, name, None))
        for name in self.secret_option_fields:
            value = getattr(self, name, None)
            mask_options(value)
            if isinstance(value, Mapping):
                for item in value.values():
                    if isinstance(item, str):
                        register_url_masks(item)
        for name in self.secret_text_fields:
            mask_texts(getattr(self, name, None))

    def refuse_rendered_credentials(self) -> None:
        """Fail (no retry) when a rendered location URL carries credentials."""
        from airflow.sdk.exceptions import AirflowFailException

        for name in (*self.secret_url_fields, *self.secret_option_fields):
            try:
                check_location(name, getattr(self, name, None), self._where())
            except CredentialsInLocationError as err:
                raise AirflowFailException(str(err)) from None

    def _where(self) -> str:
        return str(getattr(self, "task_id", "") or type(self).__name__)
