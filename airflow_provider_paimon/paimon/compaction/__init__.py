"""Small-file compaction of append tables (plan, rewrite, COMPACT commit), no Spark here.

``runner.compact`` runs one compaction with a pluggable bin rewriter (the Spark job
passes one that rewrites bins on executors); ``precommit.merge_commit_messages`` is
the writer-side merging behind ``precommit-compact=true``.
"""

from .options import CompactionOptions
from .plan import CompactionBin, CompactionPlan, plan_compaction
from .runner import CompactionResult, compact

__all__ = [
    "CompactionBin",
    "CompactionOptions",
    "CompactionPlan",
    "CompactionResult",
    "compact",
    "plan_compaction",
]
