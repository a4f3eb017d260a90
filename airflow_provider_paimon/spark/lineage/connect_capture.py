"""Lineage capture on a Spark Connect session: the data source records it at commit.

A Connect client has no SparkContext: the classic capture (an event log routed to the
data source's workers through ``sc.environment``, a driver thread pairing scans with
commits) cannot run there, and the workers run on the server's host anyway. Instead
the session's capture settings (``spark.paimon.lineage.*`` and
``spark.paimon.catalog.*``, read through ``spark.conf``) become lineage options of
every read and write of the ``paimon`` source registered on the session
(``connect_state.lineage_defaults``, carried by the registered class like the branch
redirects).
The source then records on its own, in the server's Python workers, exactly as when a
read's or write's options ask for lineage (``direct``): a scan's table lineage when it
is planned, a barrier (the job's next id, its scans since the last commit as sources)
when a write commits. The job is ``spark.paimon.lineage.job`` or the app name.

``onStoreFailure=fail`` travels with the session's settings (``direct.session_info``):
each commit of the source checks the store first and commits nothing while it does not
answer, as the classic capture's sinks do.

OpenLineage events of the capture (with or without a store) are sent where each fact is
known (``connect_openlineage``): each commit's by the source in the server's worker, a
streaming query's START and COMPLETE / FAIL by a client-side query listener.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from airflow_provider_paimon.lineage.url import default_url
from airflow_provider_paimon.paimon.commit_properties import commit_properties

from ..registration import register_data_source
from ..session_info import app_id
from . import connect_state
from .config import FAIL, CaptureConfig
from .connect_openlineage import QueryRunEvents, carried_settings
from .recorder import LineageRecorder

log = logging.getLogger(__name__)


class ConnectCapture:
    """One Connect session's capture: the lineage options its ``paimon`` source carries."""

    def __init__(self, spark: Any, config: CaptureConfig, openlineage: dict[str, Any] | None = None) -> None:
        self.spark = spark
        self.config = config
        self.closed = False
        #: what the source's commits send OpenLineage events with ({}: none)
        self.openlineage = dict(openlineage or {})
        self.query_events: QueryRunEvents | None = None

    def options(self) -> dict[str, str]:
        """The lineage proposal's options that make the source record like the capture."""
        out = {str(k): str(v) for k, v in self.config.meta_options.items()
               if not str(k).startswith(("warehouse", "table"))}
        out.update({
            "table-lineage": str(self.config.table_lineage).lower(),
            "data-lineage": str(self.config.data_lineage).lower(),
            "lineage-meta": self.config.meta,
            "jdbc.database": self.config.database,
        })
        out["jdbc.url"] = str(self.config.url or default_url())
        return out

    def close(self) -> None:
        """Stop recording on this session (the source is registered again without it)."""
        if self.closed:
            return
        self.closed = True
        connect_state.remove(self.spark, self)
        self.stop_events()
        with contextlib.suppress(Exception):  # the session may be stopped already
            register_data_source(self.spark)

    def stop_events(self) -> None:
        """Stop the client-side query listener (and send what it queued)."""
        events, self.query_events = self.query_events, None
        if events is not None:
            events.close()

    def __enter__(self) -> ConnectCapture:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def enable(spark: Any, config: CaptureConfig, conf: dict[str, str]) -> ConnectCapture:
    """Capture on Connect session ``spark``; idempotent (the running capture is returned)."""
    capture, new = connect_state.get_or_add(
        spark,  # the settings are resolved once, for a new capture (register(spark) calls this again)
        lambda: ConnectCapture(spark, config, carried_settings(conf, config.job, getattr(spark, "version", None))),
    )
    if not new:
        return capture
    openlineage = capture.openlineage
    if not config.store and not openlineage:
        log.warning(
            "lineage capture on Spark Connect: no store and no OpenLineage transport the "
            "server's workers can use: nothing is recorded (set spark.paimon.lineage.url, or "
            "spark.paimon.openlineage.transport.*)"
        )
    if config.on_store_failure == FAIL and config.store:
        # as the classic capture: an unreachable store stops the job before any data moves
        # (and a SQLite store exists before the first commit checks it)
        recorder = LineageRecorder(config, retry_interval=0.0)
        try:
            recorder.open()
            recorder.close()
        except BaseException:
            connect_state.remove(spark, capture)
            raise
        log.info("lineage capture on Spark Connect: onStoreFailure=fail, each commit of the "
                 "paimon source checks the store first (direct.check_store_before_commit)")
    if openlineage:
        try:
            capture.query_events = QueryRunEvents(spark, openlineage, commit_properties(spark_app_id=app_id(spark)))
        except BaseException:
            connect_state.remove(spark, capture)
            raise
    log.info("%s (Spark Connect: recorded by the paimon source at commit%s)", config.describe(),
             ", OpenLineage events too" if openlineage else "")
    register_data_source(spark)  # the source now carries the capture's options
    return capture


