"""Every command of `t9k-sdk`: its arguments, its help, and the function that runs it.

`t9k_sdk.cli._app` builds its parser from `add_offline`, `add_cluster` and `add_completion`.
Building the parser imports nothing but argparse and this package's light modules: each command's
function is named here (`_later`) and imported from `_offline` or `_cluster` only when that
command runs, so `t9k-sdk --help`, `--version`, `COMMAND --help` and `completion` load no
pydantic, models, YAML or Kubernetes client (tests/sdk/test_cli_startup.py), and `validate`
loads only what validating takes.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from typing import Any

from t9k_sdk.cli._completion import SHELLS, completion_script
from t9k_sdk.cli._errors import (
    DIFF_EXIT_CODES,
    EXIT_DIFF_ERROR,
    EXIT_FAILED,
    EXIT_OK,
    exit_status_help,
    exit_status_summary,
)

__all__ = ["add_cluster", "add_completion", "add_offline"]


def _later(module: str, function: str) -> Callable[..., Any]:
    """`t9k_sdk.cli.<module>.<function>`, imported when it is first called."""

    def call(*args: Any) -> Any:
        return getattr(importlib.import_module(f"t9k_sdk.cli.{module}"), function)(*args)

    return call


# -- offline commands: render, validate, crds, convert, plan, install, argocd-health -------------


_ARGOCD_HEALTH_HELP = """\
Print the Argo CD health check of GenericJob, DeepSpeedJob and ColossalAIJob: a patch of Argo
CD's argocd-cm ConfigMap with one key per kind
(resource.customizations.health.batch.tensorstack.dev_<Kind>) holding the Lua script. Without
it Argo CD shows a job as Healthy as soon as it exists; with it a job is Progressing while it
waits and runs, Healthy once it succeeded, Degraded when it failed or is blocked, Suspended while
paused.

Apply it to a running Argo CD with kubectl, or add the file to the kustomization that installs
Argo CD (`patches: [{path: argocd-cm-patch.yaml}]`). -o lua prints the script alone (the same
for the three kinds); --out-dir DIR writes it in Argo CD's resource_customizations layout,
DIR/resource_customizations/batch.tensorstack.dev/<Kind>/health.lua, with DIR/argocd-cm-patch.yaml.
See docs/how-to/argocd-health.md.
"""

_PLAN_HELP = """\
Show what the operator would create for each job, without a cluster: pods (with their commands,
as the operator rewrites them), services, the SSH secret, the hostfile config map and the
PodGroup. It runs the operator's own functions on the job as if it had just been created.

PATH is a YAML (or JSON) manifest file, - for standard input, a Python file defining jobs
(as for `render`: it runs as code), or a directory: its *.yaml, *.yml and *.json files.
Python runs only where you ask for it: a *.py file you name, or with --python the *.py files
below a directory and module names (`pkg.jobs`). Reviewing a pull request with
`t9k-sdk plan DIR` therefore runs none of its code.
"""

_CONVERT_HELP = """\
Read YAML manifests of T9k jobs, converting legacy forms (the pre-2025 ColossalAIJob
launcher/worker schema, `enable` for `enabled`), and write them in the current schema. Only the
lines of converted fields change: comments, key order, quoting and indentation stay as they
were, and a file already in the current schema is written back unchanged.

FILE is a YAML (or JSON) file, a directory (its *.yaml, *.yml and *.json files) or - (standard
input). A Python file is a usage error: `t9k-sdk render` writes Python jobs in the current
schema.
"""

_INSTALL_HELP = """\
Print everything needed to run the t9k-operator in a cluster, as YAML in apply order: the
namespace, the three CRDs, the service account, a least-privilege ClusterRole and its binding,
a Role and binding for the leader-election Lease, and the Deployment. Apply it with server-side
apply (the CRDs are larger than client-side apply's annotation limit):

  t9k-sdk install --image registry.example.com/t9k-operator:0.1.0 | kubectl apply --server-side -f -

With --watch-namespace NS the operator reconciles only the jobs in NS, and its permissions are
a Role and RoleBinding in NS instead of the ClusterRole (NS must exist first).

--kustomize DIR writes the same install as a kustomize tree instead (what deploy/kustomize
holds, with your --image and --namespace): DIR/base (cluster-wide), DIR/overlays/cluster-wide
and DIR/overlays/namespace-scoped, which watches --watch-namespace (default: team-a, a
placeholder). --helm-chart DIR writes a Helm chart whose default values are your options (what
deploy/helm/t9k-operator holds). Existing files of the same names are overwritten; nothing
else in DIR is touched.

  t9k-sdk install --kustomize ops/t9k --image registry.example.com/t9k-operator:0.1.0
  kubectl kustomize ops/t9k/overlays/cluster-wide | kubectl apply --server-side -f -
"""

_RENDER_HELP = """\
Import Python files or modules that define T9k jobs and write their manifests as YAML.

Every module-level job is rendered, in definition order: builders (t9k_sdk.GenericJob,
TorchrunJob, DeepSpeedJob, ColossalAIJob), wire models (t9k_sdk.models.*), and lists or tuples
of them.
PATH is a .py file, a directory (every *.py below it, sorted; directories starting with `.` or
`_` are skipped) or a module name importable from the current directory (pkg.jobs). YAML
manifests are not read (a usage error): `t9k-sdk convert` rewrites them.

Without --out-dir the jobs go to stdout as one multi-document YAML stream (-o json: one JSON
object, or a List of several). With --out-dir DIR each job is written to DIR/<kind>-<name>.yaml
(e.g. deepspeedjob-bert.yaml), starting with a comment line that marks it as rendered; files
are written only if every job is valid. --kustomization also writes DIR/kustomization.yaml
listing them (for Argo CD, Flux or `kubectl apply -k`); --prune deletes the files an earlier
render wrote whose job is gone (files without the header line are never deleted).

-o is an output format, as everywhere in t9k-sdk and kubectl; a directory is --out-dir DIR. Any
other -o value is a usage error that writes nothing (earlier versions took it as a directory).

Two different jobs with the same kind, namespace and name (a sweep that kept one name) are an
error naming both; the same job reached twice, or two that render identically, is written once.
"""

_VALIDATE_HELP = """\
Check every YAML document of every FILE against the T9k job schemas: YAML syntax and duplicate
keys, kind and apiVersion, fields and types, the cross-field rules, and unknown fields in pod
templates (as `kubectl apply --validate=strict` would). Prints one line per problem:

  FILE: document N (Kind 'name'): field.path: what is wrong

Documents are numbered from 0 within each file. FILE may be `-` (standard input) or a
directory (its *.yaml, *.yml and *.json files). A Python file is a usage error: its jobs are
checked when they are built (`t9k-sdk render jobs.py | t9k-sdk validate -`). Exit status 1 if
anything is invalid.

Legacy forms that T9k still publishes (the ColossalAIJob `launcher`/`worker` schema, `enable`
for `enabled`) are checked as `t9k-sdk apply`, `plan` and `render` convert them, with a warning
and problems named by the fields as written; --strict makes them errors, since the API server
rejects them as written.
"""

_CRDS_HELP = """\
Print the CustomResourceDefinitions of GenericJob, DeepSpeedJob and ColossalAIJob
(batch.tensorstack.dev/v1beta1), generated from the SDK's models, as multi-document YAML
(-o json: a JSON List); with --out-dir DIR write one file per CRD, DIR/<group>_<plural>.yaml. Apply them with server-side
apply, `kubectl apply --server-side -f DIR`: they are larger than the annotation that
client-side apply keeps.
"""

_EPILOG = exit_status_summary()


def _output_options(parser: argparse.ArgumentParser, directory_help: str) -> None:
    parser.add_argument(
        "-o",
        "--output",
        metavar="FORMAT",
        help="format on standard output: yaml (default) or json",
    )
    parser.add_argument("--out-dir", metavar="DIR", help=directory_help)


def add_offline(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register render, validate, crds, convert, plan, install and argocd-health on `t9k-sdk`'s
    commands."""
    fmt = argparse.RawDescriptionHelpFormatter
    render = sub.add_parser(
        "render",
        help="write the jobs defined in Python files as YAML manifests",
        description=_RENDER_HELP,
        epilog="examples:\n  t9k-sdk render jobs/ --out-dir manifests/\n"
        "  t9k-sdk render jobs/ --out-dir manifests/ --kustomization --prune\n  t9k-sdk render"
        " jobs/bert.py > bert.yaml\n  t9k-sdk render mypkg.jobs\n\n" + _EPILOG,
        formatter_class=fmt,
    )
    render.add_argument(
        "paths", nargs="+", metavar="PATH", help="a .py file, a directory or a module"
    )
    _output_options(render, "write one file per job into DIR (created if missing)")
    render.add_argument(
        "--kustomization",
        action="store_true",
        help="also write DIR/kustomization.yaml listing the job files (an existing one keeps its"
        " other keys and entries; only the jobs' entries in `resources` are rewritten)",
    )
    render.add_argument(
        "--prune",
        action="store_true",
        help="delete the job files an earlier render wrote into DIR whose job is gone (only"
        " files that start with render's header line)",
    )
    render.set_defaults(run=_later("_offline", "_cmd_render"), parser=render)

    validate = sub.add_parser(
        "validate",
        help="check YAML manifests of T9k jobs; exit 1 on any problem",
        description=_VALIDATE_HELP,
        epilog="examples:\n  t9k-sdk validate manifests/*.yaml\n  kubectl get gj mnist -o yaml |"
        " t9k-sdk validate -\n\n" + _EPILOG,
        formatter_class=fmt,
    )
    validate.add_argument("files", nargs="+", metavar="FILE", help="a YAML file, a directory or -")
    validate.add_argument(
        "-o",
        "--output",
        choices=("text", "json", "yaml"),
        default="text",
        help="text (default: one line per problem), or the verdict and the problems as json or"
        " yaml (file, document, object, path, message)",
    )
    validate.add_argument(
        "--strict",
        action="store_true",
        help="legacy forms (ColossalAIJob launcher/worker, `enable`) are errors, not warnings:"
        " for manifests that kubectl, Argo CD or Flux apply as written",
    )
    validate.set_defaults(run=_later("_offline", "_cmd_validate"), parser=validate)

    crds = sub.add_parser(
        "crds",
        help="print the CustomResourceDefinitions of the three job kinds",
        description=_CRDS_HELP,
        epilog="examples:\n  t9k-sdk crds | kubectl apply --server-side -f -\n"
        "  t9k-sdk crds --out-dir deploy/crds/\n\n" + _EPILOG,
        formatter_class=fmt,
    )
    _output_options(crds, "write one file per CRD into DIR")
    crds.set_defaults(run=_later("_offline", "_cmd_crds"), parser=crds)

    convert = sub.add_parser(
        "convert",
        help="rewrite manifests in the current schema (legacy ColossalAIJob, `enable`)",
        description=_CONVERT_HELP,
        epilog="examples:\n  t9k-sdk convert old.yaml > new.yaml\n  t9k-sdk convert -i"
        " manifests/*.yaml\n\n" + _EPILOG,
        formatter_class=fmt,
    )
    convert.add_argument("files", nargs="+", metavar="FILE", help="a YAML file, a directory or -")
    convert.add_argument(
        "-i", "--in-place", action="store_true", help="rewrite the files instead of printing"
    )
    convert.set_defaults(run=_later("_offline", "_cmd_convert"), parser=convert)

    plan = sub.add_parser(
        "plan",
        help="show the pods, services and other objects the operator would create",
        description=_PLAN_HELP,
        epilog="examples:\n  t9k-sdk plan examples/deepspeed_bert.yaml\n  t9k-sdk plan jobs/"
        " -o yaml\n\n" + _EPILOG,
        formatter_class=fmt,
    )
    plan.add_argument(
        "paths", nargs="+", metavar="PATH", help="a YAML file, -, a directory, or Python jobs"
    )
    plan.add_argument(
        "--python",
        action="store_true",
        help="also import the *.py files below a directory, and module names; they run as code",
    )
    plan.add_argument(
        "-o",
        "--output",
        choices=("summary", "yaml", "json"),
        default="summary",
        help="summary (default), or the full objects as yaml or json",
    )
    plan.set_defaults(run=_later("_offline", "_cmd_plan"), parser=plan)

    install = sub.add_parser(
        "install",
        help="print the operator's install (CRDs, RBAC, Deployment) as YAML",
        description=_INSTALL_HELP,
        epilog=_EPILOG,
        formatter_class=fmt,
    )
    install.add_argument(
        "--image", default=None, help="operator image (default: t9k-operator:VERSION)"
    )
    install.add_argument(
        "--namespace", default=None, help="namespace to run in (default: t9k-system)"
    )
    install.add_argument(
        "--watch-namespace",
        default=None,
        metavar="NS",
        help="reconcile only the jobs in NS, with a Role there instead of a ClusterRole"
        " (default: all namespaces)",
    )
    install.add_argument(
        "--network-policy",
        action="store_true",
        help="also print a NetworkPolicy: only the health port is reachable, and only from"
        " namespaces labelled metrics=enabled (docs/operator/security.md)",
    )
    install.add_argument(
        "--kustomize",
        default=None,
        metavar="DIR",
        help="write a kustomize base and overlays to DIR instead of printing YAML",
    )
    install.add_argument(
        "--helm-chart",
        default=None,
        metavar="DIR",
        help="write a Helm chart to DIR instead of printing YAML",
    )
    install.set_defaults(run=_later("_offline", "_cmd_install"), parser=install)

    argocd_health = sub.add_parser(
        "argocd-health",
        help="print the Argo CD health check of the job kinds (an argocd-cm patch)",
        description=_ARGOCD_HEALTH_HELP,
        epilog="examples:\n  t9k-sdk argocd-health > argocd-cm-patch.yaml\n"
        "  kubectl patch configmap argocd-cm -n argocd --patch-file argocd-cm-patch.yaml\n"
        "  t9k-sdk argocd-health -o lua > health.lua\n"
        "  t9k-sdk argocd-health --out-dir deploy/argocd/\n\n" + _EPILOG,
        formatter_class=fmt,
    )
    argocd_health.add_argument(
        "-o",
        "--output",
        choices=("yaml", "json", "lua"),
        default=None,
        help="yaml (default: the argocd-cm patch), json (the same patch), or lua (the script)",
    )
    argocd_health.add_argument(
        "--out-dir",
        metavar="DIR",
        help="write the scripts in Argo CD's resource_customizations layout and"
        " argocd-cm-patch.yaml into DIR",
    )
    argocd_health.set_defaults(run=_later("_offline", "_cmd_argocd_health"), parser=argocd_health)


# -- completion ----------------------------------------------------------------------------------


_COMPLETION_HELP = """\
Print a script that makes the shell complete t9k-sdk's commands, their flags, the values of
flags with fixed choices (-o, --dry-run), the job kinds (gj, dj, caij) and file names, and after
a kind the names of its jobs, asked of the cluster as `t9k-sdk get KIND -o name` would (with the
-n, --context and --kubeconfig typed; at most 5 s). Load it in the current shell with
`source <(t9k-sdk completion bash)`, or save it where the shell looks for completions (see the
examples). The script is generated from this version's commands: regenerate it after an upgrade.
"""


def add_completion(
    sub: argparse._SubParsersAction,  # type: ignore[type-arg]
    root: argparse.ArgumentParser,
) -> None:
    """Register `completion`, which describes `root` (register it last: it lists the others)."""
    fmt = argparse.RawDescriptionHelpFormatter
    completion = sub.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh or fish)",
        description=_COMPLETION_HELP,
        epilog="examples:\n  source <(t9k-sdk completion bash)\n"
        "  t9k-sdk completion bash > ~/.local/share/bash-completion/completions/t9k-sdk\n"
        "  echo 'source <(t9k-sdk completion zsh)' >> ~/.zshrc\n"
        "  t9k-sdk completion fish > ~/.config/fish/completions/t9k-sdk.fish\n\n" + _EPILOG,
        formatter_class=fmt,
    )
    completion.add_argument("shell", choices=SHELLS, metavar="SHELL", help="bash, zsh or fish")
    completion.set_defaults(run=_cmd_completion, parser=completion, root=root)


def _cmd_completion(args: argparse.Namespace) -> int:
    sys.stdout.write(completion_script(args.root, args.shell))
    return EXIT_OK


# -- cluster commands: apply, diff, get, describe, wait, logs, pause, resume, scale, delete -------

_EXIT_STATUS_HELP = exit_status_help()

_KINDS_HELP = "KIND is gj, dj or caij (or GenericJob, DeepSpeedJob, ColossalAIJob, any case)."


def _cluster_options(parser: argparse.ArgumentParser) -> None:
    """--kubeconfig, --context, -n: every cluster verb takes them."""
    group = parser.add_argument_group("cluster options")
    group.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config; in a pod: its service"
        " account)",
    )
    group.add_argument("--context", metavar="NAME", help="kubeconfig context (default: current)")
    group.add_argument(
        "-n", "--namespace", metavar="NS", help="namespace (default: the context's, else `default`)"
    )


def add_cluster(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register apply, diff, get, describe, wait, logs, pause, resume, scale and delete on
    `t9k-sdk`'s commands."""
    fmt = argparse.RawDescriptionHelpFormatter

    def verb(
        name: str,
        help: str,
        description: str,
        examples: str,
        run: str,
        *,
        exit_status: str = _EXIT_STATUS_HELP,
        failure: int = EXIT_FAILED,
    ) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = sub.add_parser(
            name,
            help=help,
            description=description,
            epilog=f"examples:\n{examples}\n\n{exit_status}",
            formatter_class=fmt,
        )
        _cluster_options(p)
        p.set_defaults(run=_later("_cluster", run), parser=p, failure=failure)
        return p

    def files(p: argparse.ArgumentParser, required: bool) -> None:
        p.add_argument(
            "-f",
            "--filename",
            action="append",
            required=required,
            metavar="FILE",
            help="a YAML manifest, a directory of them, or - (repeatable); with --python also"
            " a Python file, module or directory of job definitions",
        )
        p.add_argument(
            "--python",
            action="store_true",
            help="also import Python job files (named, or in a directory) and use the jobs"
            " they define; they run as code, so only with this flag",
        )

    p = verb(
        "apply",
        "create or update jobs on the cluster (server-side apply)",
        "Create or update the jobs of YAML manifests (or, with --python, Python files) on the\n"
        "cluster, with server-side apply (field manager t9k-sdk). Applying the same job again\n"
        "changes nothing. Every input is read and validated first: if any is invalid, nothing is\n"
        "applied.\n\n"
        "FILE is a YAML file (.yaml, .yml, .json), `-` (standard input) or a directory (its YAML\n"
        "files). Python job files run as code: they are read only with --python (a directory's\n"
        "*.py files are otherwise skipped with a note). A job without a namespace goes to -n (or\n"
        "the context's).\n\n"
        "--dry-run=server sends the jobs to the API server, which validates them (schema, CEL\n"
        "rules, admission) and answers as if it applied them, but stores nothing;\n"
        "--dry-run=client only reads and validates them with the SDK, without a cluster.",
        "  t9k-sdk apply -f manifests/ -n team-a\n  t9k-sdk apply -f jobs/bert.py --python\n"
        "  t9k-sdk render jobs/ | t9k-sdk apply -f -\n"
        "  t9k-sdk apply -f manifests/ --dry-run=server",
        "_cmd_apply",
    )
    files(p, required=True)
    p.add_argument(
        "--dry-run",
        choices=("none", "client", "server"),
        default="none",
        help="server: the API server checks the jobs but stores nothing; client: check them"
        " offline only (default: none, apply them)",
    )
    p.add_argument(
        "-o",
        "--output",
        choices=("yaml", "json", "name"),
        help="print the jobs as the API server stored them (with --dry-run=server: as it would"
        " store them, defaults filled in; with --dry-run=client: as read and validated) instead"
        " of one line per job",
    )

    p = verb(
        "diff",
        "show what apply would change, as a unified diff of YAML",
        "Show how the jobs on the cluster would change if the files were applied: for each job,\n"
        "a unified diff between its live object and the object the API server would store\n"
        "(a server-side dry run of the apply: nothing is changed). A job that does not exist yet\n"
        "is shown as all new. managedFields and resourceVersion are left out. Reads FILE as\n"
        "apply does (a directory's kustomization.yaml is skipped).\n\n"
        "The dry run applies as field manager t9k-sdk, so a field another tool applied and the\n"
        "file no longer has is not shown as removed. To see what the GitOps tool that applies\n"
        "the jobs would change, removals included, diff as its field manager: Flux's\n"
        "kustomize-controller, or Argo CD's argocd-controller (with ServerSideApply=true).",
        "  t9k-sdk diff -f manifests/\n  t9k-sdk render jobs/ | t9k-sdk diff -f -\n"
        "  t9k-sdk diff -f manifests/ -n ml-team --field-manager kustomize-controller",
        "_cmd_diff",
        exit_status=exit_status_help(DIFF_EXIT_CODES, " (as kubectl diff)"),
        failure=EXIT_DIFF_ERROR,
    )
    files(p, required=True)
    p.add_argument(
        "--field-manager",
        default="t9k-sdk",  # the client's FIELD_MANAGER (not imported: the client is an extra)
        metavar="NAME",
        help="apply (dry run) as this field manager, as kubectl diff --field-manager (default:"
        " t9k-sdk); kustomize-controller for Flux, argocd-controller for Argo CD",
    )

    p = verb(
        "get",
        "list jobs, or show one (table, yaml, json); -w to watch",
        "List the jobs of a kind (all three kinds without KIND) or show one job.\n\n"
        "Table columns: NAME KIND PHASE REPLICAS (running/desired) RESTARTS (replica restarts by\n"
        "the operator) AGE; -o wide adds the reason and message of the job's headline condition\n"
        "(Failed when it failed, else Running). -w prints the current state, then a line per\n"
        "change; for one named job it ends when the job has finished.\n\n" + _KINDS_HELP,
        "  t9k-sdk get\n  t9k-sdk get dj -A\n  t9k-sdk get gj mnist -o yaml\n"
        "  t9k-sdk get gj/mnist -w",
        "_cmd_get",
    )
    p.add_argument("args", nargs="*", metavar="KIND [NAME]", help="kind, and a job's name")
    p.add_argument(
        "-o",
        "--output",
        choices=("table", "wide", "yaml", "json", "name"),
        default="table",
        help="output format (default: table)",
    )
    p.add_argument("-w", "--watch", action="store_true", help="keep printing changes")
    p.add_argument(
        "--watch-timeout", metavar="DURATION", help="with -w: stop after this long (e.g. 10m)"
    )
    p.add_argument(
        "-A", "--all-namespaces", action="store_true", help="list the jobs of every namespace"
    )
    _selector(p, "list only the jobs whose labels match")

    p = verb(
        "describe",
        "show a job in detail: spec, status, pods, events and a diagnosis",
        "Show one job: a summary of its spec, its phase and conditions, each pod's state\n"
        "(node, restarts, container state with waiting reasons and exit codes), the events of\n"
        "the job and its pods, and a diagnosis: why pods are pending (the scheduler's message),\n"
        "image pull errors, crash loops, failures with exit codes and termination messages,\n"
        "restarts, an expired launcher barrier, or no operator looking at the job.\n\n"
        + _KINDS_HELP,
        "  t9k-sdk describe gj mnist\n  t9k-sdk describe dj/bert -n team-a\n"
        "  t9k-sdk describe gj mnist -o json",
        "_cmd_describe",
    )
    p.add_argument("args", nargs="+", metavar="KIND NAME")
    p.add_argument(
        "-o",
        "--output",
        choices=("text", "json", "yaml"),
        default="text",
        help="text (default), or the job, pods, events and findings as json or yaml",
    )

    p = verb(
        "wait",
        "wait until a job reaches a phase or condition; fail fast when it fails or is stuck",
        "Wait, through a watch, until the job reaches a phase (--for phase=Succeeded, the\n"
        "default) or a condition (--for condition=Completed, condition=Paused=False). Progress\n"
        "goes to standard error.\n\n"
        "Stops early, with exit status 1 and the reason, when the job fails (its failure\n"
        "message, e.g. `Pod[mnist-worker-0] exited with error code 2`), when it finishes in\n"
        "another state, or when it is stuck for the grace period: a pod that fits no node\n"
        "(Unschedulable, with the scheduler's message), ImagePullBackOff, ErrImagePull,\n"
        "InvalidImageName, CrashLoopBackOff, CreateContainerConfigError; an expired launcher\n"
        "barrier stops it at once. Exit status 3 when the timeout passes first.\n\n" + _KINDS_HELP,
        "  t9k-sdk wait gj mnist\n  t9k-sdk wait dj bert --for phase=Running --timeout 10m\n"
        "  t9k-sdk wait gj mnist --for condition=Completed --stuck-grace 0",
        "_cmd_wait",
    )
    p.add_argument("args", nargs="+", metavar="KIND NAME")
    p.add_argument(
        "--for",
        dest="for_",
        type=_later("_cluster", "_wait_target"),
        default="phase=Succeeded",
        metavar="phase=PHASE|condition=TYPE[=True|False]",
        help="what to wait for (default: phase=Succeeded)",
    )
    p.add_argument(
        "--timeout",
        default="1h",
        metavar="DURATION",
        help="give up after this long, e.g. 90s, 10m, 2h (default 1h; 0 or none: no limit)",
    )
    p.add_argument(
        "--stuck-grace",
        default="60s",
        metavar="DURATION",
        help="how long a job may stay stuck before giving up (default 60s; 0: at once)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress on standard error")

    p = verb(
        "logs",
        "print the logs of a job's replicas, each line prefixed [type-index]",
        "Print the logs of every replica of a job (or of --type, or of --type and --index),\n"
        "each line prefixed with its replica: [worker-0], [launcher]. With -f, wait for pods\n"
        "that do not exist yet, read a restarted replica's new pod from its start, and stop\n"
        "when the job has finished. --tail applies to the logs that exist when reading starts.\n"
        "Messages about the logs themselves (e.g. a node whose kubelet cannot be reached) go to\n"
        "standard error. Control characters in the logs (terminal escapes, carriage returns)\n"
        "are shown as escapes such as \\x1b; --raw writes them as they are.\n\n" + _KINDS_HELP,
        "  t9k-sdk logs gj mnist\n  t9k-sdk logs dj bert -f\n"
        "  t9k-sdk logs gj mnist --type worker --index 1 --tail 100",
        "_cmd_logs",
    )
    p.add_argument("args", nargs="+", metavar="KIND NAME")
    p.add_argument("--type", metavar="TYPE", help="only replicas of this type (worker, ...)")
    p.add_argument("--index", type=int, metavar="N", help="only the replica with this index")
    p.add_argument("-c", "--container", metavar="NAME", help="container (default: the first)")
    p.add_argument("-f", "--follow", action="store_true", help="keep following until the job ends")
    p.add_argument("--tail", type=int, metavar="N", help="only the last N lines of each log")
    p.add_argument("--timestamps", action="store_true", help="prefix each line with its time")
    p.add_argument(
        "--raw",
        action="store_true",
        help="write the processes' bytes as they are, terminal escapes included (trust the job)",
    )

    for name, what in (
        ("pause", "pause a job: its pods are deleted until it is resumed"),
        ("resume", "resume a paused job"),
    ):
        p = verb(
            name,
            what,
            what[0].upper() + what[1:] + " (sets spec.runMode.pause.enabled).\n\n" + _KINDS_HELP,
            f"  t9k-sdk {name} gj mnist",
            "_cmd_pause",
        )
        p.add_argument("args", nargs="+", metavar="KIND NAME")

    p = verb(
        "scale",
        "set the number of workers of an elastic DeepSpeedJob",
        "Set spec.elastic.expectedReplicas of an elastic DeepSpeedJob. The number must lie\n"
        "within spec.elastic.minReplicas..maxReplicas, which are fixed when the job is created;\n"
        "the operator then relaunches the training on the new set of workers.",
        "  t9k-sdk scale dj gpt --replicas 6\n  t9k-sdk scale gpt --replicas 2",
        "_cmd_scale",
    )
    p.add_argument("args", nargs="+", metavar="[dj] NAME")
    p.add_argument("--replicas", type=int, required=True, metavar="N", help="number of workers")

    p = verb(
        "delete",
        "delete jobs (their pods and other objects go with them)",
        "Delete jobs named by KIND and NAME, by a label selector (-l), or by the manifests that\n"
        "created them (-f); the garbage collector deletes their pods, services, config maps and\n"
        "secrets.\n\n" + _KINDS_HELP,
        "  t9k-sdk delete gj mnist\n  t9k-sdk delete dj bert gpt --wait=false\n"
        "  t9k-sdk delete -l team=nlp\n  t9k-sdk delete -f manifests/",
        "_cmd_delete",
    )
    p.add_argument("args", nargs="*", metavar="KIND NAME [NAME...]")
    _selector(p, "delete the jobs whose labels match (of KIND, or of every kind)")
    files(p, required=False)
    # kubectl's spelling: --wait=false (argparse matches a whole option string before it splits
    # at "=", so these are flags of their own, and `--wait gj mnist` still reads gj as KIND).
    p.add_argument(
        "--wait",
        "--wait=true",
        dest="wait",
        action="store_true",
        default=True,
        help="return once the jobs are gone (the default, as kubectl's); --wait=false returns"
        " once the API server accepted the deletions",
    )
    p.add_argument("--wait=false", dest="wait", action="store_false", help=argparse.SUPPRESS)
    p.add_argument(
        "--ignore-not-found", action="store_true", help="a job that does not exist is not an error"
    )


def _selector(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "-l",
        "--selector",
        metavar="SELECTOR",
        help=f"{what} SELECTOR, evaluated by the API server: `key=value`, `key!=value`,"
        " `key in (a,b)`, `key`, `!key`, comma-separated",
    )
