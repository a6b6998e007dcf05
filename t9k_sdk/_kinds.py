"""The one registry of job kinds: every list in the SDK and the operator that names all the kinds
is derived from `JOB_KINDS`.

    JOB_KINDS          -> (JobKind, ...)  GenericJob, DeepSpeedJob, ColossalAIJob, in that order
    by_kind("GenericJob") -> JobKind      (KeyError for another kind)
    AnyJob             -> the union of the registered wire model classes (for mypy)

A `JobKind` holds what the code needs to know of a kind beyond its wire models: its names (read
from the model class, which defines `KIND`, `PLURAL` and `SHORT_NAME`), whether its pods launch
over SSH, the builders that build it and the extra columns of `kubectl get`. The CRDs, the
codecs, the job conventions, the command line, the Pulumi components, the Argo CD health checks,
the reconcile core's kind rules and the operator read it. tests/sdk/test_kind_registry.py fails,
naming the place, when a registered kind is missing from any of them.

A leaf: it imports nothing of the SDK but the wire models (an import-linter contract), so every
layer may read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias

from t9k_sdk import models

__all__ = [
    "JOB_KINDS",
    "KIND_NAMES",
    "MODELS",
    "SSH_KINDS",
    "AnyJob",
    "JobKind",
    "PrinterColumn",
    "by_kind",
]

AnyJob: TypeAlias = models.GenericJob | models.DeepSpeedJob | models.ColossalAIJob
"""Any registered job kind's wire model. Written out so that mypy narrows it;
tests/sdk/test_kind_registry.py checks that it names exactly the registered models."""


@dataclass(frozen=True)
class PrinterColumn:
    """A column `kubectl get` shows for a kind (an `additionalPrinterColumns` entry of its CRD)."""

    name: str
    type: Literal["integer", "string", "date"]
    json_path: str
    description: str


@dataclass(frozen=True)
class JobKind:
    """One registered job kind."""

    model: type[AnyJob]
    """The wire model class (`t9k_sdk.models.GenericJob`, ...): it defines `KIND`, `PLURAL`
    and `SHORT_NAME`."""
    builders: tuple[str, ...]
    """The names, in `t9k_sdk` (and `t9k_sdk.builders`), of the builders whose `build()` gives
    this kind (`GenericJob` and `TorchrunJob` build GenericJobs)."""
    ssh: bool
    """Whether its pods launch over SSH: the operator gives such a job a key pair (`<job>-ssh`)
    and the launch bootstrap, which sets the `T9K_*` variables."""
    printer_columns: tuple[PrinterColumn, ...]
    """The columns `kubectl get` shows between Phase and Ready (the CRD adds those around)."""

    @property
    def kind(self) -> str:
        """`GenericJob`, `DeepSpeedJob`, ..."""
        return self.model.KIND

    @property
    def list_kind(self) -> str:
        """`GenericJobList`, ..."""
        return f"{self.kind}List"

    @property
    def plural(self) -> str:
        """The resource name in URLs and RBAC rules: `genericjobs`, ..."""
        return self.model.PLURAL

    @property
    def singular(self) -> str:
        """The lower-case kind: the CRD's singular name and the `tensorstack.dev/component`
        label of the job's children."""
        return self.kind.lower()

    @property
    def short_name(self) -> str:
        """`gj`, `dj`, `caij`: the name `kubectl` and `t9k-sdk` accept for the kind."""
        return self.model.SHORT_NAME

    def __str__(self) -> str:
        return self.kind


_RUNNING: Final = PrinterColumn(
    "Running", "integer", ".status.aggregate.running", "Replicas running"
)

JOB_KINDS: Final[tuple[JobKind, ...]] = (
    JobKind(
        model=models.GenericJob,
        builders=("GenericJob", "TorchrunJob"),
        ssh=False,
        printer_columns=(
            _RUNNING,
            PrinterColumn(
                "Succeeded", "integer", ".status.aggregate.succeeded", "Replicas succeeded"
            ),
            PrinterColumn("Failed", "integer", ".status.aggregate.failed", "Replicas failed"),
        ),
    ),
    JobKind(
        model=models.DeepSpeedJob,
        builders=("DeepSpeedJob",),
        ssh=True,
        printer_columns=(
            PrinterColumn(
                "Workers", "integer", ".spec.worker.replicas", "Worker replicas requested"
            ),
            _RUNNING,
            PrinterColumn(
                "Restarts",
                "integer",
                ".status.backoffCount",
                "Restarts performed (runPolicy.backoffLimit bounds them)",
            ),
        ),
    ),
    JobKind(
        model=models.ColossalAIJob,
        builders=("ColossalAIJob",),
        ssh=True,
        printer_columns=(
            PrinterColumn(
                "Workers",
                "integer",
                '.spec.replicaSpecs[?(@.type=="worker")].replicas',
                "Worker replicas requested",
            ),
            _RUNNING,
        ),
    ),
)
"""Every job kind, in the order the SDK lists them (CRDs, help texts, selectors)."""

KIND_NAMES: Final[tuple[str, ...]] = tuple(k.kind for k in JOB_KINDS)
"""`("GenericJob", "DeepSpeedJob", "ColossalAIJob")`."""

MODELS: Final[tuple[type[AnyJob], ...]] = tuple(k.model for k in JOB_KINDS)
"""The wire model classes, for `isinstance` checks."""

SSH_KINDS: Final[tuple[str, ...]] = tuple(k.kind for k in JOB_KINDS if k.ssh)
"""The kinds whose pods launch over SSH: `("DeepSpeedJob", "ColossalAIJob")`."""

_BY_KIND: Final[Mapping[str, JobKind]] = {k.kind: k for k in JOB_KINDS}


def by_kind(kind: str) -> JobKind:
    """The registered kind named `kind` (exactly, as in a manifest); KeyError otherwise."""
    return _BY_KIND[kind]
