"""`meta/v1` shapes: object and list metadata."""

from __future__ import annotations

from pydantic import Field

from t9k_sdk.models._base import Bool, Int, K8sPassthroughModel, Time

__all__ = ["ListMeta", "ObjectMeta", "OwnerReference"]


class OwnerReference(K8sPassthroughModel):
    """Identifies an owning object; the garbage collector deletes dependents with their owner."""

    api_version: str
    """API version of the owner."""
    kind: str
    """Kind of the owner."""
    name: str
    """Name of the owner."""
    uid: str
    """UID of the owner."""
    controller: Bool | None = None
    """If true, this reference points to the managing controller."""
    block_owner_deletion: Bool | None = None
    """If true, the owner cannot be deleted from the key-value store until this reference is removed."""


class ObjectMeta(K8sPassthroughModel):
    """Standard object metadata. Fields the server sets (managedFields, ...) are kept as given."""

    name: str | None = None
    """Name of the object, unique within its namespace."""
    generate_name: str | None = None
    """Prefix the server uses to generate a unique name when `name` is not given."""
    namespace: str | None = None
    """Namespace of the object; absent means the namespace of the client or of the command."""
    labels: dict[str, str] | None = None
    """Map of string keys and values for selecting and organising objects."""
    annotations: dict[str, str] | None = None
    """Map of string keys and values for arbitrary, non-identifying metadata."""
    uid: str | None = None
    """Unique identifier set by the server."""
    resource_version: str | None = None
    """Opaque version set by the server, for optimistic concurrency."""
    generation: Int | None = None
    """Sequence number of the desired state, set by the server."""
    creation_timestamp: Time | None = None
    """When the object was created, set by the server."""
    deletion_timestamp: Time | None = None
    """When the object will be deleted, set by the server on a graceful deletion."""
    owner_references: list[OwnerReference] | None = None
    """Objects this object depends on."""
    finalizers: list[str] | None = None
    """Must be empty before the object is deleted from the registry."""


class ListMeta(K8sPassthroughModel):
    """Metadata of a list."""

    resource_version: str | None = None
    """Version of the list, set by the server."""
    continue_: str | None = Field(default=None, alias="continue")
    """Token to fetch the next page, set when the list was truncated."""
    remaining_item_count: Int | None = None
    """Number of items not yet returned when the list was truncated."""
