"""What several rooms of the Airflow layer share: no I/O, no hook, no operator.

Secrets in templated fields and connections (``templated_secrets``, ``connection_secrets``,
``secret_masking``, ``location_sources``, ``templating``), the sensors' deferral and
trigger-event handling (``deferral``), the sensors' and operators' side of asset
partitions (``asset_partitions``) and the audit summary the UI plugin reads
(``audit_summary``). It imports ``paimon/``, ``lineage/`` and Airflow itself, never
``hooks``, ``triggers``, ``sensors``, ``operators``, ``task_groups`` or ``plugins``
(docs/architecture.md, "The Airflow layer's order").
"""
