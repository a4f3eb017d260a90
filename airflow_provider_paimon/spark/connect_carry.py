"""Carry this package inside a pickle, for Spark Connect's streaming Python runners.

A Spark Connect server (4.3) gives a session's Python artifacts
(``spark.addArtifacts(zip, pyfile=True)``, see ``session.ship_package``) to the Python
workers that plan and run batch queries, but not to the long-lived runners of
streaming queries: the streaming data source runner, the streaming sink runner and
the ``foreachBatch`` runner unpickle their object with the server's own Python path
only, and fail with ``No module named 'airflow_provider_paimon'`` on a server that
does not have the package installed.

So an object that must reach them pickles as ``(_install_and_load, (zip, payload))``:
``_install_and_load`` travels by value (this module is registered with cloudpickle's
``register_pickle_by_value`` and the function uses only the standard library); it
writes the package zip once per content under the temp folder, puts it on
``sys.path`` and unpickles the object itself. Only objects built for a Connect
session carry it (``CarriedOnConnect.carry_package``: the data source registered on a
Connect session, its stream reader and writer, the ``foreachBatch`` writer pickled by a
Connect client): a classic job has the package through ``--py-files`` already. The
stream reader and writer need it too: Spark runs a micro-batch's tasks outside the
session's artifact context, so their executor workers lack the artifacts as well.
"""

from __future__ import annotations

import sys
from typing import Any

from airflow_provider_paimon.packaging import build_py_files_zip

PACKAGE = "airflow_provider_paimon"


def _install_and_load(zip_bytes: bytes, payload: bytes) -> Any:
    """On the server: the package zip on ``sys.path``, then the object (stdlib only)."""
    import hashlib
    import importlib
    import os
    import pickle
    import sys
    import tempfile

    digest = hashlib.sha256(zip_bytes).hexdigest()[:16]
    path = os.path.join(tempfile.gettempdir(), f"airflow_provider_paimon-carried-{digest}.zip")
    if not os.path.exists(path):
        fd, tmp = tempfile.mkstemp(prefix=".carrying-", suffix=".zip", dir=tempfile.gettempdir())
        with os.fdopen(fd, "wb") as fh:
            fh.write(zip_bytes)
        os.replace(tmp, path)
    if path not in sys.path:
        sys.path.insert(1, path)
        importlib.invalidate_caches()
    cls, state = pickle.loads(payload)
    obj = cls.__new__(cls)
    if hasattr(obj, "__setstate__"):
        obj.__setstate__(state)
    elif state:
        obj.__dict__.update(state)
    return obj


def package_zip_bytes() -> bytes:
    """The package as a zip: the one this process imported it from (a server worker that
    got it as an artifact), else built from the installed package (a client)."""
    import airflow_provider_paimon

    source = str(airflow_provider_paimon.__file__)
    marker = ".zip" + "/"
    if marker in source.replace("\\", "/"):
        with open(source[: source.replace("\\", "/").index(marker) + 4], "rb") as fh:
            return fh.read()

    with open(build_py_files_zip(), "rb") as fh:
        return fh.read()


def carried(obj: Any) -> tuple[Any, tuple[bytes, bytes]]:
    """``obj.__reduce__`` for an object that must reach a streaming runner of Connect."""
    from pyspark import cloudpickle

    payload = cloudpickle.dumps((type(obj), obj.__getstate__()))
    return _install_and_load, (package_zip_bytes(), payload)


class CarriedOnConnect:
    """Mixin: with ``carry_package`` set, an instance pickles with the package inside."""

    carry_package: bool = False

    def __reduce_ex__(self, protocol: Any) -> Any:
        if not self.carry_package:
            return super().__reduce_ex__(protocol)
        return carried(self)


def _register() -> None:
    try:
        from pyspark import cloudpickle
    except ImportError:  # pragma: no cover - the spark layer needs pyspark
        return
    cloudpickle.register_pickle_by_value(sys.modules[__name__])


_register()
