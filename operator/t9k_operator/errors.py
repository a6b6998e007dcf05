"""The one error type the API layer raises, classified by what the caller should do next."""

from __future__ import annotations

__all__ = ["ApiError"]


class ApiError(Exception):
    """A request to the API server failed.

    `status` is the HTTP status (0 when no response arrived: connection refused, timeout, TLS).
    The properties name the cases callers treat differently.
    """

    def __init__(self, status: int, reason: str, message: str = "", *, what: str = "") -> None:
        self.status = status
        self.reason = reason
        self.message = message
        self.what = what
        detail = f": {message}" if message else ""
        prefix = f"{what}: " if what else ""
        super().__init__(f"{prefix}{status} {reason}{detail}")

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def conflict(self) -> bool:
        """409 Conflict: a stale resourceVersion or a failed precondition. Re-read and retry."""
        return self.status == 409 and self.reason != "AlreadyExists"

    @property
    def already_exists(self) -> bool:
        return self.status == 409 and self.reason == "AlreadyExists"

    @property
    def gone(self) -> bool:
        """410 Gone: a watch's resourceVersion is too old; list again."""
        return self.status == 410

    @property
    def forbidden(self) -> bool:
        return self.status == 403

    @property
    def permanent(self) -> bool:
        """The server refused the request itself, so sending it again will not help until
        something changes (the job, a quota, a policy, an installed API): 400 Bad Request,
        403 Forbidden (quota, admission policy, missing permission), 404 Not Found (namespace or
        API gone), 413, 422 Invalid, and any other 4xx. Timeouts (408), conflicts and
        AlreadyExists (409), 410 and 429 Too Many Requests pass by themselves, as 5xx and
        connection errors (status 0) do."""
        return 400 <= self.status < 500 and self.status not in (408, 409, 410, 429)
