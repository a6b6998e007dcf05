"""Builders (L2): intent-level constructors that `build()` the wire models."""

from t9k_sdk.builders._common import (
    PVC,
    AutotuneName,
    CleanUpPolicyName,
    Debug,
    EmptyDir,
    Env,
    Resources,
    RestartPolicyName,
    Resume,
    SecretVolume,
    Volume,
)
from t9k_sdk.builders.colossalai_job import ColossalAIJob, Launcher
from t9k_sdk.builders.deepspeed_job import DeepSpeedJob, Elastic
from t9k_sdk.builders.generic_job import GenericJob, Replica
from t9k_sdk.builders.torchrun_job import TorchrunJob

__all__ = [
    "PVC",
    "AutotuneName",
    "CleanUpPolicyName",
    "ColossalAIJob",
    "Debug",
    "DeepSpeedJob",
    "Elastic",
    "EmptyDir",
    "Env",
    "GenericJob",
    "Launcher",
    "Replica",
    "Resources",
    "RestartPolicyName",
    "Resume",
    "SecretVolume",
    "TorchrunJob",
    "Volume",
]
