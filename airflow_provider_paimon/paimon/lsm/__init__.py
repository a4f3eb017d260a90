"""Primary-key tables (Paimon's LSM tree per bucket): merge-engine rules and compaction.

``engines`` says which row kinds a table's merge engine takes; ``retracts`` records
retract counts pypaimon's writer leaves out; ``compact.compact_primary_keys`` merges
each bucket's sorted runs (``levels``, ``universal``, ``rewrite``) and commits one
COMPACT snapshot. ``paimon.compaction.compact`` dispatches primary-key tables here.
"""

from .compact import LsmPlan, LsmUnit, compact_primary_keys, plan_lsm_compaction
from .options import LsmOptions

__all__ = ["LsmOptions", "LsmPlan", "LsmUnit", "compact_primary_keys", "plan_lsm_compaction"]
