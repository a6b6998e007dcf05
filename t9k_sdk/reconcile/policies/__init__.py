"""The policies of a reconcile pass, one module each.

Each reads the pass' state (`t9k_sdk.reconcile.state.PassState`) and records or returns its
decisions; none imports another (an import contract holds them to it). The order they run in is
`t9k_sdk.reconcile.core`'s; the walk over an active job's replicas, which asks several of them
about one replica, is `t9k_sdk.reconcile.replicas`.

| module        | decides                                                                      |
|---------------|------------------------------------------------------------------------------|
| `restart`     | whether an ended replica is restarted, and its budget (per replica, type, job)|
| `lost_nodes`  | a pod on a node that is gone or NotReady past a bound: force-deleted, replaced|
| `disruptions` | a pod the cluster ended (DisruptionTarget): replaced, no restart counted     |
| `launch`      | a launcher held until its workers run; the job failing when one of them can't |
| `batching`    | how many pods one pass plans (a batch), and planning one                     |
| `deadline`    | `runPolicy.activeDeadlineSeconds`: when its clock started, when it runs out   |
| `pause`       | pause (every pod deleted) and the mode pods start in (debug, resumed)        |
| `cleanup`     | the pods deleted once the job ended, or outside its spec                     |
| `conflicts`   | a foreign object holding a name the job needs; refused creates and updates   |
| `others`      | the services, config maps, secrets and pod group kept as the spec says       |
"""
