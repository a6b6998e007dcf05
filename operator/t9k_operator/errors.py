"""The one error type of the API layer: `t9k_sdk._kube.errors.ApiError`, shared with the client.

The operator classifies a failure by what to do next: `not_found`, `conflict` (re-read and
retry), `already_exists`, `gone` (list again), `forbidden`, `permanent` (do not retry until
something changes), `unreachable` (no answer).
"""

from __future__ import annotations

from t9k_sdk._kube.errors import ApiError

__all__ = ["ApiError"]
