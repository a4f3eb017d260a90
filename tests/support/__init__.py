"""Helpers several test folders share (tables written with pypaimon, maintenance
scenarios, the streaming kill-and-restart harness): named as what they are, not like
test files, so pytest never collects them and no test edits ``sys.path`` to reach them.
``tests/`` is on ``sys.path`` (its conftest folder), so they import as ``support.<name>``.
"""
