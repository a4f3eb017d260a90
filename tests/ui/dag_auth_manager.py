"""An auth manager for UI tests: SimpleAuthManager whose listed users read only some DAGs.

``$PAIMON_TEST_DAG_READERS`` is JSON ``{"user": ["dag_id", ...]}``; a listed user may
GET exactly those DAGs (and not "every DAG"), as a FAB or Keycloak role restricted to
some DAGs would. Users not listed keep SimpleAuthManager's role-based answer.
"""

from __future__ import annotations

import json
import os

from airflow.api_fastapi.auth.managers.simple.simple_auth_manager import SimpleAuthManager

ENV = "PAIMON_TEST_DAG_READERS"


class DagListAuthManager(SimpleAuthManager):
    def is_authorized_dag(self, *, method, user, access_entity=None, details=None) -> bool:
        allowed = json.loads(os.environ.get(ENV, "{}")).get(user.username)
        if allowed is None:
            return super().is_authorized_dag(method=method, user=user, access_entity=access_entity, details=details)
        return method == "GET" and details is not None and details.id in allowed
