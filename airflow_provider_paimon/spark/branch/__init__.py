"""Branches seen from Spark: session branch redirects and branch diffs/audits.

``redirect`` maps ``spark.paimon.branch.*`` onto every read and write of a session
(the data source, the native path, streaming); ``diff`` compares a branch with main
and runs the audit checks a correction is published after.
"""
