"""User code with mistakes that `mypy --strict` must report, each on a line marked `# E` (or
`# E: text`, where the error must say `text`)."""

from __future__ import annotations

from t9k_sdk import DeepSpeedJob, GenericJob, Replica, Resources

worker = Replica(type="worker", image="pt:2", restart_policy="Sometimes")  # E
job = GenericJob(name="mnist", replicas=[worker], clean_up_policy="Unfinshed")  # E
cpu = Resources(cpu=[1])  # E
no_image = DeepSpeedJob(name="x", workers=2, run=["t.py"])  # E: Missing named argument "image"

import t9k_sdk  # noqa: E402 - the public names are imported on first use, and still checked

typo = t9k_sdk.DeepSpeedJb  # E
