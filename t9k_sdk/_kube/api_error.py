"""The one error type of the API layer, classified by what the caller should do next."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["ApiError"]


class ApiError(Exception):
    """A request to the API server failed.

    `status` is the HTTP status, 0 when no answer arrived (connection refused, timeout, TLS, a
    stream that broke off). `reason` and `message` come from the server's `Status` object when
    it sent one; `details` is its `details` (kind, name, causes). `what` names the request
    (`create pods team-a/x`). The properties name the cases callers treat differently.
    """

    def __init__(
        self,
        status: int,
        reason: str,
        message: str = "",
        *,
        what: str = "",
        details: Mapping[str, Any] | None = None,
    ) -> None:
        self.status = status
        self.reason = reason
        self.message = message
        self.what = what
        self.details: Mapping[str, Any] = dict(details or {})
        detail = f": {message}" if message else ""
        prefix = f"{what}: " if what else ""
        super().__init__(f"{prefix}{status} {reason}{detail}")

    @property
    def causes(self) -> list[str]:
        """The server's field-level causes (`spec.x: Required value`), as lines."""
        found = []
        for cause in self.details.get("causes") or ():
            if not isinstance(cause, Mapping) or not cause.get("message"):
                continue
            text = str(cause["message"])
            found.append(f"{cause['field']}: {text}" if cause.get("field") else text)
        return found

    @property
    def unreachable(self) -> bool:
        """No answer: the server could not be reached, or the connection broke off."""
        return self.status == 0

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

    @classmethod
    def from_status(cls, status: Mapping[str, Any], *, what: str = "") -> ApiError:
        """The error a `Status` object describes (a watch's ERROR event carries one)."""
        return cls(
            int(status.get("code") or 0),
            str(status.get("reason") or ""),
            str(status.get("message") or ""),
            what=what,
            details=status.get("details") if isinstance(status.get("details"), Mapping) else None,
        )
