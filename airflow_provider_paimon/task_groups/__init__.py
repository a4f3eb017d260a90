"""Task-group builders: several operators and sensors wired into one reusable piece of a DAG.

``cascade.cascade_correction`` (docs/cascade.md). A task group sits above operators and
sensors: it imports both, and nothing below imports it.
"""
