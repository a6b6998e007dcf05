"""What people read: durations, ages, tables, colour, kind names."""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime

import pytest

from t9k_sdk import DeepSpeedJob, Elastic, GenericJob, Replica, codecs, models
from t9k_sdk.cli._format import (
    Painter,
    colour_wanted,
    for_terminal,
    job_row,
    parse_duration,
    render_table,
    table_headers,
    visible,
)
from t9k_sdk.client.errors import UnknownKindError
from t9k_sdk.client.format import human_age
from t9k_sdk.client.kinds import resolve_kind


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90", 90.0),
        ("90s", 90.0),
        ("10m", 600.0),
        ("1h30m", 5400.0),
        ("1.5h", 5400.0),
        ("500ms", 0.5),
        ("2d", 172800.0),
        ("0", 0.0),
        (" 1H ", 3600.0),
        ("1m30s250ms", 90.25),
    ],
)
def test_durations_read_like_go_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "ten minutes", "10x", "m10", "1h-5m", "5 m"])
def test_bad_durations_say_how_to_write_one(text: str) -> None:
    with pytest.raises(ValueError, match=r"e\.g\. 30s, 10m, 1h30m"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("seconds", "age"),
    [
        (0, "0s"),
        (59, "59s"),
        (119, "119s"),
        (120, "2m"),
        (200, "3m20s"),
        (42 * 60 + 10, "42m"),
        (5 * 3600 + 10 * 60, "5h10m"),
        (20 * 3600, "20h"),
        (3 * 86400 + 4 * 3600, "3d4h"),
        (120 * 86400, "120d"),
        (3 * 365 * 86400 + 20 * 86400, "3y20d"),
        (-5, "0s"),
    ],
)
def test_ages_read_like_kubectl_get(seconds: float, age: str) -> None:
    assert human_age(seconds) == age


def test_tables_align_columns_three_spaces_apart() -> None:
    text = render_table(
        ["NAME", "PHASE", "AGE"],
        [["mnist", "Running", "5m"], ["a-much-longer-name", "Failed", "10s"]],
        Painter(False),
    )
    assert text.split("\n") == [
        "NAME                 PHASE     AGE",
        "mnist                Running   5m",
        "a-much-longer-name   Failed    10s",
    ]


def test_colour_does_not_shift_the_columns() -> None:
    plain = render_table(["A", "B"], [[("Running", "blue"), "x"]], Painter(False))
    coloured = for_terminal(render_table(["A", "B"], [[("Running", "blue"), "x"]], Painter(True)))
    assert "\033[34mRunning\033[0m" in coloured
    assert coloured.replace("\033[34m", "").replace("\033[0m", "") == plain


OSC52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (OSC52, "\\x1b]52;c;ZWNobyBwd25lZA==\\x07"),
        ("\x1b]0;title\x07", "\\x1b]0;title\\x07"),
        ("\x9b2J", "\\x9b2J"),  # the 8-bit CSI
        ("a\rb\x00\x7f", "a\\x0db\\x00\\x7f"),
        ("abc\u202efed", "abc\\u202efed"),  # right-to-left override
        ("two\nlines\tand a tab, caf\u00e9 \u4e2d", "two\nlines\tand a tab, caf\u00e9 \u4e2d"),
    ],
)
def test_control_characters_from_the_cluster_are_shown_as_escapes(text: str, shown: str) -> None:
    assert visible(text) == shown
    assert for_terminal(text) == shown


def test_a_table_cell_stays_on_one_line_and_a_tenant_cannot_forge_the_cli_colours() -> None:
    cells = [[("Fail\x1b[32med", "red"), "line\nbreak\tx"], ["ok", OSC52]]
    out = for_terminal(render_table(["PHASE", "MESSAGE"], cells, Painter(True)))
    assert out.count("\n") == 2  # header and two rows
    assert "\x1b[31mFail\\x1b[32med\x1b[0m" in out  # the tenant's colour code is text
    assert "line\\x0abreak\\x09x" in out
    assert re.sub(r"\x1b\[(31|0)m", "", out).count("\x1b") == 0
    # the Painter's marks are made with a nonce no text from the cluster can know
    forged = "\x00" + "0" * 16 + ":31\x00" + "x"
    assert "\x1b" not in for_terminal(forged)


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colour_only_on_a_terminal_and_never_with_no_color(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert colour_wanted(Tty())
    assert not colour_wanted(io.StringIO())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not colour_wanted(Tty())
    monkeypatch.setenv("NO_COLOR", "")  # no-color.org: an empty value does not count
    assert colour_wanted(Tty())
    monkeypatch.setenv("TERM", "dumb")
    assert not colour_wanted(Tty())


def with_status(job: models.K8sModel, status: dict[str, object]) -> codecs.AnyJob:
    manifest = codecs.to_manifest(job)  # type: ignore[arg-type]
    manifest["metadata"]["creationTimestamp"] = "2026-01-01T12:00:00Z"
    manifest["metadata"]["namespace"] = "team-a"
    manifest["status"] = status
    return codecs.from_manifest(manifest)


NOW = datetime(2026, 1, 1, 12, 7, 30, tzinfo=UTC).timestamp()


def test_a_get_row_shows_phase_replicas_restarts_and_age() -> None:
    job = with_status(
        GenericJob(name="mnist", replicas=[Replica(type="worker", count=4, image="pt")]).build(),
        {
            "phase": "Running",
            "aggregate": {"running": 3, "pending": 1},
            "tasks": [{"type": "worker", "restartCount": 2}],
        },
    )
    assert job_row(job, NOW, namespace=False, wide=False) == [
        "mnist",
        "GenericJob",
        ("Running", "blue"),
        "3/4",
        "2",
        "7m30s",
    ]
    assert table_headers(namespace=True, wide=True) == [
        "NAMESPACE",
        "NAME",
        "KIND",
        "PHASE",
        "REPLICAS",
        "RESTARTS",
        "AGE",
        "REASON",
        "MESSAGE",
    ]


def test_an_elastic_job_counts_its_expected_workers_and_wide_shows_the_reason() -> None:
    dj = DeepSpeedJob(
        name="gpt", image="ds", workers=4, elastic=Elastic(min=2, max=8), run=["t.py"]
    ).build()
    job = with_status(
        dj,
        {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "Running",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "Pod[gpt-worker-0] cannot be scheduled",
                }
            ],
        },
    )
    row = job_row(job, NOW, namespace=True, wide=True)
    assert row[0] == "team-a"
    assert row[4] == "0/4"
    assert row[-2:] == ["Unschedulable", "Pod[gpt-worker-0] cannot be scheduled"]


def test_a_job_without_status_shows_none() -> None:
    job = with_status(
        GenericJob(name="x", replicas=[Replica(type="worker", image="pt")]).build(), {}
    )
    assert job_row(job, NOW, namespace=False, wide=False)[2] == ("<none>", None)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("gj", "GenericJob"),
        ("GJ", "GenericJob"),
        ("genericjob", "GenericJob"),
        ("GenericJobs", "GenericJob"),
        ("dj", "DeepSpeedJob"),
        ("deepspeedjobs", "DeepSpeedJob"),
        ("caij", "ColossalAIJob"),
        ("ColossalAIJob", "ColossalAIJob"),
    ],
)
def test_kinds_accept_short_names_and_kind_names_in_any_case(text: str, kind: str) -> None:
    resolved = resolve_kind(text)
    assert resolved.kind == kind
    assert resolve_kind(resolved.model) is resolved


def test_an_unknown_kind_lists_the_known_ones_and_guesses() -> None:
    with pytest.raises(UnknownKindError) as err:
        resolve_kind("deepspeedjb")
    message = str(err.value)
    assert "expected one of gj (GenericJob), dj (DeepSpeedJob), caij (ColossalAIJob)" in message
    assert "did you mean 'dj' (DeepSpeedJob)?" in message
    with pytest.raises(UnknownKindError, match="not a T9k job class"):
        resolve_kind(models.RunMode)  # type: ignore[arg-type]
