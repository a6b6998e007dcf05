"""Errors of the cluster client. Every one is a `t9k_sdk.T9kError` with a message for a user.

ClientError
├── KubeconfigError            no usable kubeconfig / in-cluster configuration
├── ClusterUnreachableError    the API server did not answer
├── ApiRequestError            the API server refused a request (status, reason, message)
│   ├── JobNotFoundError       no such job (also a LookupError)
│   └── KindNotServedError     the cluster has no CRD for the kind
├── UnknownKindError           not gj/dj/caij or a job kind name (also a ValueError)
├── ScaleError                 scale() asked for a size the job cannot take (also a ValueError)
├── JobFinishedError           pause()/resume() of a job that has already finished
└── WaitError                  wait() ends without reaching its target; has kind, name,
    │                          namespace, reason, message and the last `job` seen
    ├── JobFailedError         the job failed (reason and message of its Failed condition)
    │   └── InvalidSpecError   ... because the operator rejected its spec
    ├── JobStuckError          the job cannot make progress by itself (after the grace period)
    │   ├── UnschedulableError     a pod fits no node (the scheduler's message)
    │   ├── ImagePullError         ErrImagePull, ImagePullBackOff, InvalidImageName, ErrImageNeverPull
    │   ├── CrashLoopError         CrashLoopBackOff
    │   ├── ContainerConfigError   CreateContainerConfigError, CreateContainerError, ...
    │   └── BarrierTimeoutError    the launcher's readiness barrier gave up
    ├── TargetUnreachableError the job finished in a state that is not the target
    ├── JobDeletedError        the job was deleted while waiting
    └── WaitTimeoutError       the timeout passed first (also a TimeoutError)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from t9k_sdk.errors import T9kError

if TYPE_CHECKING:
    from t9k_sdk.codecs import AnyJob

__all__ = [
    "ApiRequestError",
    "BarrierTimeoutError",
    "ClientError",
    "ClusterUnreachableError",
    "ContainerConfigError",
    "CrashLoopError",
    "ImagePullError",
    "InvalidSpecError",
    "JobDeletedError",
    "JobFailedError",
    "JobFinishedError",
    "JobNotFoundError",
    "JobStuckError",
    "KindNotServedError",
    "KubeconfigError",
    "ScaleError",
    "TargetUnreachableError",
    "UnknownKindError",
    "UnschedulableError",
    "WaitError",
    "WaitTimeoutError",
    "stuck_error_class",
]


class ClientError(T9kError):
    """Base class of the errors of `t9k_sdk.client`."""


class KubeconfigError(ClientError):
    """No kubeconfig could be loaded (missing file, unknown context, not in a pod)."""


class ClusterUnreachableError(ClientError, ConnectionError):
    """The API server could not be reached."""


class ApiRequestError(ClientError):
    """The API server answered a request with an error."""

    def __init__(self, message: str, *, status: int = 0, reason: str = "") -> None:
        super().__init__(message)
        self.status = status
        """HTTP status (403, 404, 409, 422, 500, ...)."""
        self.reason = reason
        """The API server's reason (`NotFound`, `Forbidden`, `Invalid`, ...)."""


class JobNotFoundError(ApiRequestError, LookupError):
    """The job does not exist."""

    def __init__(self, kind: str, name: str, namespace: str) -> None:
        super().__init__(
            f"{kind} {name!r} not found in namespace {namespace!r}", status=404, reason="NotFound"
        )
        self.kind = kind
        self.name = name
        self.namespace = namespace


class KindNotServedError(ApiRequestError):
    """The cluster does not serve the kind: its CustomResourceDefinition is not installed."""


class UnknownKindError(ClientError, ValueError):
    """A kind that is not one of the T9k job kinds or their short names."""


class ScaleError(ClientError, ValueError):
    """`scale()` asked for something the job cannot do."""


class JobFinishedError(ClientError):
    """The job has already finished, so the request would have no effect."""


class WaitError(ClientError):
    """`wait()` ended without reaching its target. `job` is the last state seen (if any)."""

    def __init__(
        self,
        kind: str,
        name: str,
        namespace: str,
        reason: str,
        message: str,
        job: AnyJob | None = None,
    ) -> None:
        self.kind = kind
        self.name = name
        self.namespace = namespace
        self.reason = reason
        """A CamelCase word: `Failed`, `InvalidSpec`, `Unschedulable`, `Timeout`, ..."""
        self.message = message
        """What happened, for a person."""
        self.job = job
        super().__init__(self._text())

    def _text(self) -> str:
        return f"{self.kind} {self.name!r} ({self.namespace}): {self.reason}: {self.message}"


class JobFailedError(WaitError):
    """The job failed."""


class InvalidSpecError(JobFailedError):
    """The operator rejected the job's spec; it will never run."""


class JobStuckError(WaitError):
    """The job cannot make progress by itself (it stayed so for the grace period)."""


class UnschedulableError(JobStuckError):
    """A pod fits no node; the message is the scheduler's."""


class ImagePullError(JobStuckError):
    """An image cannot be pulled (ErrImagePull, ImagePullBackOff, InvalidImageName)."""


class CrashLoopError(JobStuckError):
    """A container keeps crashing (CrashLoopBackOff)."""


class ContainerConfigError(JobStuckError):
    """A container cannot be created (CreateContainerConfigError, CreateContainerError, ...)."""


class BarrierTimeoutError(JobStuckError):
    """The launcher's readiness barrier gave up waiting for a worker's DNS name or sshd."""


class TargetUnreachableError(WaitError):
    """The job finished in a state other than the one waited for."""


class JobDeletedError(WaitError):
    """The job was deleted while waiting for it."""


class WaitTimeoutError(WaitError, TimeoutError):
    """The timeout passed before the job reached the target."""


_STUCK_CLASSES: dict[str, type[JobStuckError]] = {
    "Unschedulable": UnschedulableError,
    "ErrImagePull": ImagePullError,
    "ImagePullBackOff": ImagePullError,
    "ErrImageNeverPull": ImagePullError,
    "InvalidImageName": ImagePullError,
    "CrashLoopBackOff": CrashLoopError,
    "CreateContainerConfigError": ContainerConfigError,
    "CreateContainerError": ContainerConfigError,
    "RunContainerError": ContainerConfigError,
    "BarrierTimeout": BarrierTimeoutError,
}


def stuck_error_class(reason: str) -> type[JobStuckError]:
    """The `JobStuckError` subclass for a stuck reason (`JobStuckError` itself if unknown)."""
    return _STUCK_CLASSES.get(reason, JobStuckError)
