"""Typed SDK for T9k training jobs: GenericJob, DeepSpeedJob and ColossalAIJob.

    from t9k_sdk import DeepSpeedJob
    job = DeepSpeedJob(name="bert", image="...", workers=4, gpus_per_worker=8,
                       run=["train.py", "--epochs", "3"])
    print(job.to_yaml())

The names below are the public API; everything in underscore modules is private. The wire models
are in `t9k_sdk.models` (the builders here `build()` them).

Each name is imported from its module on first use (`t9k_sdk._lazy_names`), so `import t9k_sdk`
(and `t9k-sdk --help`) loads neither pydantic nor the models until a name that needs them is
asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from t9k_sdk._lazy_names import lazy_names

if TYPE_CHECKING:
    from t9k_sdk import models
    from t9k_sdk.builders import (
        PVC,
        ColossalAIJob,
        Debug,
        DeepSpeedJob,
        Elastic,
        EmptyDir,
        GenericJob,
        Launcher,
        Replica,
        Resources,
        Resume,
        SecretVolume,
        TorchrunJob,
    )
    from t9k_sdk.codecs import (
        AnyJob,
        dump_all_yaml,
        from_manifest,
        load_all_yaml,
        to_manifest,
        update_yaml,
    )
    from t9k_sdk.errors import (
        InvalidManifestError,
        InvalidYAMLError,
        LegacyManifestWarning,
        Problem,
        T9kError,
    )
    from t9k_sdk.validation import validate_manifest

__version__ = "0.1.0"

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_names(
        __name__,
        globals(),
        {
            "models": "t9k_sdk.models",
            "validate_manifest": "t9k_sdk.validation",
            **dict.fromkeys(
                (
                    "PVC",
                    "ColossalAIJob",
                    "Debug",
                    "DeepSpeedJob",
                    "Elastic",
                    "EmptyDir",
                    "GenericJob",
                    "Launcher",
                    "Replica",
                    "Resources",
                    "Resume",
                    "SecretVolume",
                    "TorchrunJob",
                ),
                "t9k_sdk.builders",
            ),
            **dict.fromkeys(
                (
                    "AnyJob",
                    "dump_all_yaml",
                    "from_manifest",
                    "load_all_yaml",
                    "to_manifest",
                    "update_yaml",
                ),
                "t9k_sdk.codecs",
            ),
            **dict.fromkeys(
                (
                    "InvalidManifestError",
                    "InvalidYAMLError",
                    "LegacyManifestWarning",
                    "Problem",
                    "T9kError",
                ),
                "t9k_sdk.errors",
            ),
        },
    )

__all__ = [
    "PVC",
    "AnyJob",
    "ColossalAIJob",
    "Debug",
    "DeepSpeedJob",
    "Elastic",
    "EmptyDir",
    "GenericJob",
    "InvalidManifestError",
    "InvalidYAMLError",
    "Launcher",
    "LegacyManifestWarning",
    "Problem",
    "Replica",
    "Resources",
    "Resume",
    "SecretVolume",
    "T9kError",
    "TorchrunJob",
    "__version__",
    "dump_all_yaml",
    "from_manifest",
    "load_all_yaml",
    "models",
    "to_manifest",
    "update_yaml",
    "validate_manifest",
]
