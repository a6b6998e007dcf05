# GenericJob: TensorFlow MultiWorkerMirroredStrategy with one chief and three workers.
#
# Shows: service ports (one Service per replica, named like its pod, e.g. keras-worker-0) and
# the variables the operator substitutes in command, args and env: `$(type)` and `$(rank)` of
# the replica itself, `$(service.<type>[<rank>].host)` of any replica, and
# `$(service.port[<name>])` of a service port. Every replica gets its own TF_CONFIG from them.
#
#   t9k-sdk render examples/genericjob_tf_config.py

from t9k_sdk import GenericJob, Replica, Resources

TF_CONFIG = """\
{
  "cluster": {
    "chief": ["$(service.chief[0].host):$(service.port[http])"],
    "worker": ["$(service.worker[0].host):$(service.port[http])",
               "$(service.worker[1].host):$(service.port[http])",
               "$(service.worker[2].host):$(service.port[http])"]
  },
  "task": {"type": "$(type)", "index": $(rank)}
}
"""


def tf_replica(role: str, count: int) -> Replica:
    return Replica(
        type=role,
        count=count,
        image="tensorflow/tensorflow:2.16.1-gpu",
        command=["python", "/code/keras_mnist.py", "--save-dir=/output/$(type)-$(rank)"],
        env={"TF_CONFIG": TF_CONFIG},
        ports={"http": 2222},
        resources=Resources(cpu=2, memory="4Gi", gpus=1),
    )


job = GenericJob(
    name="keras",
    replicas=[tf_replica("chief", 1), tf_replica("worker", 3)],
    service_ports={"http": 2222},
    success_rules=[{"chief": [0]}],
)
