"""Streaming read and write through the paimon data source."""
