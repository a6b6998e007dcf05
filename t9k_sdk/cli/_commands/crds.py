"""`t9k-sdk crds`: print the CustomResourceDefinitions of the three job kinds."""

from __future__ import annotations

import argparse
import sys

from t9k_sdk.cli._declare import Subcommands, command, output_options
from t9k_sdk.cli._errors import EXIT_OK, list_payload, print_data
from t9k_sdk.cli._output import format_and_directory, write_and_report

__all__ = ["add", "run"]

_HELP = """\
Print the CustomResourceDefinitions of GenericJob, DeepSpeedJob and ColossalAIJob
(batch.tensorstack.dev/v1beta1), generated from the SDK's models, as multi-document YAML
(-o json: a JSON List); with --out-dir DIR write one file per CRD, DIR/<group>_<plural>.yaml. Apply them with server-side
apply, `kubectl apply --server-side -f DIR`: they are larger than the annotation that
client-side apply keeps.
"""


def add(sub: Subcommands) -> None:
    parser = command(
        sub,
        "crds",
        help="print the CustomResourceDefinitions of the three job kinds",
        description=_HELP,
        examples="  t9k-sdk crds | kubectl apply --server-side -f -\n"
        "  t9k-sdk crds --out-dir deploy/crds/",
        run=run,
    )
    output_options(parser, "write one file per CRD into DIR")


def run(args: argparse.Namespace) -> int:
    from t9k_sdk import codecs
    from t9k_sdk.crds import generate_crds

    output, directory = format_and_directory(args)
    if directory is None and output == "json":
        print_data(list_payload(generate_crds()), "json")
        return EXIT_OK
    # <group>_<plural>.yaml -> the YAML of each CustomResourceDefinition
    files = {
        f"{crd['spec']['group']}_{crd['spec']['names']['plural']}.yaml": codecs.dump_all_yaml([crd])
        for crd in generate_crds()
    }
    if directory is None:
        sys.stdout.write("---\n".join(files.values()))
        return EXIT_OK
    return write_and_report(directory, files, "CRD")
