"""Typed SDK for T9k training jobs."""
