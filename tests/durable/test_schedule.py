"""The schedule grammar, checked through ``toolrig cron next`` (the command is the grammar's contract)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from click.testing import CliRunner
from hypothesis import example, given, settings
from hypothesis import strategies as st

from toolrig.commands.cron import command as cron
from toolrig.durable.schedule import ACCEPTED_FORMS, OutOfRange, ScheduleError, parse_schedule


def next_times(schedule: str, start: str, count: int = 3, zone: str | None = None) -> list[str]:
    args = ["next", schedule, "--from", start, "--count", str(count), "--json"]
    if zone:
        args += ["--tz", zone]
    result = CliRunner().invoke(cron, args)
    assert result.exit_code == 0, result.output
    return list(json.loads(result.output))


def refused(schedule: str) -> str:
    result = CliRunner().invoke(cron, ["next", "--from", "2026-01-01T00:00:00+00:00", "--json", "--", schedule])
    assert result.exit_code != 0
    return result.output


@pytest.mark.parametrize(
    ("schedule", "expected"),
    [
        ("30s", ["2026-01-01T00:00:30+00:00", "2026-01-01T00:01:00+00:00", "2026-01-01T00:01:30+00:00"]),
        ("15m", ["2026-01-01T00:15:00+00:00", "2026-01-01T00:30:00+00:00", "2026-01-01T00:45:00+00:00"]),
        ("2h", ["2026-01-01T02:00:00+00:00", "2026-01-01T04:00:00+00:00", "2026-01-01T06:00:00+00:00"]),
        ("1d", ["2026-01-02T00:00:00+00:00", "2026-01-03T00:00:00+00:00", "2026-01-04T00:00:00+00:00"]),
    ],
)
def test_every_n_fires_every_period_from_the_start(schedule: str, expected: list[str]) -> None:
    assert next_times(schedule, "2026-01-01T00:00:00+00:00") == expected


def test_every_n_counts_from_the_start_not_from_a_grid() -> None:
    # `cron next --from T` shows a job added at T: seed 000's intervals count from when the job was added.
    assert next_times("15m", "2026-01-01T00:07:13+00:00", 1) == ["2026-01-01T00:22:13+00:00"]


def test_five_field_cron_in_utc() -> None:
    assert next_times("0 9 * * 1-5", "2026-01-02T10:00:00+00:00") == [
        "2026-01-05T09:00:00+00:00",
        "2026-01-06T09:00:00+00:00",
        "2026-01-07T09:00:00+00:00",
    ]


def test_cron_with_a_zone_in_the_schedule_text() -> None:
    assert next_times("0 9 * * * Europe/Paris", "2026-01-01T00:00:00+00:00", 1) == ["2026-01-01T09:00:00+01:00"]


def test_cron_with_the_zone_given_by_tz_and_a_naive_start_in_that_zone() -> None:
    assert next_times("0 9 * * *", "2026-07-01T08:00", 1, zone="America/New_York") == ["2026-07-01T09:00:00-04:00"]


def test_day_of_month_and_day_of_week_both_restricted_fire_on_either_as_vixie_cron() -> None:
    # The 13th of any month OR any Friday (not only Friday the 13th).
    assert next_times("0 0 13 * 5", "2026-01-01T00:00:00+00:00", 4) == [
        "2026-01-02T00:00:00+00:00",
        "2026-01-09T00:00:00+00:00",
        "2026-01-13T00:00:00+00:00",
        "2026-01-16T00:00:00+00:00",
    ]


def test_day_of_week_alone_restricts_by_weekday_only() -> None:
    assert next_times("0 0 * * 5", "2026-01-01T00:00:00+00:00", 2) == [
        "2026-01-02T00:00:00+00:00",
        "2026-01-09T00:00:00+00:00",
    ]


def test_a_time_skipped_by_spring_forward_fires_at_the_first_instant_after() -> None:
    # Paris skips 02:00-03:00 on 2026-03-29.
    assert next_times("30 2 * * *", "2026-03-28T12:00", 2, zone="Europe/Paris") == [
        "2026-03-29T03:00:00+02:00",
        "2026-03-30T02:30:00+02:00",
    ]


def test_a_time_repeated_by_fall_back_fires_twice() -> None:
    # Paris repeats 02:00-03:00 on 2026-10-25.
    assert next_times("30 2 * * *", "2026-10-24T12:00", 3, zone="Europe/Paris") == [
        "2026-10-25T02:30:00+02:00",
        "2026-10-25T02:30:00+01:00",
        "2026-10-26T02:30:00+01:00",
    ]


def test_relative_one_shots_fire_once_from_the_start() -> None:
    assert next_times("+20m", "2026-01-01T00:00:00+00:00") == ["2026-01-01T00:20:00+00:00"]
    assert next_times("+2h", "2026-01-01T00:00:00+00:00") == ["2026-01-01T02:00:00+00:00"]


def test_an_iso_time_fires_once_and_naive_means_the_zone() -> None:
    assert next_times("2026-05-01T09:00", "2026-01-01T00:00:00+00:00", zone="Europe/Paris") == [
        "2026-05-01T09:00:00+02:00"
    ]
    assert next_times("2026-05-01T09:00:00+00:00", "2026-01-01T00:00:00+00:00") == ["2026-05-01T09:00:00+00:00"]


def test_an_iso_time_in_the_past_never_fires() -> None:
    assert next_times("2025-05-01T09:00", "2026-01-01T00:00:00+00:00") == []


@pytest.mark.parametrize(
    "schedule",
    [
        "",
        "   ",
        "every day",
        "5",
        "0s",
        "+5s",
        "+1d",
        "-5m",
        "15 minutes",
        "1.5h",
        "61 * * * *",
        "* * * *",
        "0 0 * * * *",  # six cron fields: seconds are not part of the grammar
        "0 0 * * * * *",
        "0 9 * * * Mars/Olympus",
        "0 9 * * * ../../etc/passwd",
        "@daily",
        "2026-13-01T00:00",
        "0 9 * * 1-5; rm -rf /",
        "x" * 500,
    ],
)
def test_anything_else_is_refused_with_the_accepted_forms(schedule: str) -> None:
    output = refused(schedule)
    assert "Traceback" not in output
    assert "Accepted forms" in output or "time zone" in output


def test_an_unknown_zone_option_is_refused_clearly() -> None:
    result = CliRunner().invoke(cron, ["next", "15m", "--from", "2026-01-01T00:00", "--tz", "Nowhere/City"])
    assert result.exit_code != 0
    assert "time zone" in result.output


def test_a_bad_from_time_is_refused_clearly() -> None:
    result = CliRunner().invoke(cron, ["next", "15m", "--from", "yesterday"])
    assert result.exit_code != 0
    assert "ISO 8601" in result.output


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=60))
def test_any_text_either_parses_or_raises_schedule_error(text: str) -> None:
    try:
        parsed = parse_schedule(text)
    except ScheduleError as exc:
        assert "Accepted forms" in str(exc) or "time zone" in str(exc) or "period" in str(exc)
    else:
        assert parsed.kind in ("every", "cron", "once")


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.sampled_from(["*", "0", "5", "*/7", "1-5", "1,3", "L", "?", "99", "-", "/", "a", "MON", "JAN"]),
        min_size=5,
        max_size=5,
    )
)
def test_cron_like_field_soup_never_escapes_as_another_exception(fields: list[str]) -> None:
    text = " ".join(fields)
    try:
        parsed = parse_schedule(text)
    except ScheduleError:
        return
    from datetime import UTC, datetime

    parsed.next_times(datetime(2026, 1, 1, tzinfo=UTC), 2)


def test_accepted_forms_name_every_form() -> None:
    for form in ("15m", "cron", "+20m", "ISO 8601"):
        assert form in ACCEPTED_FORMS


# ---------------------------------------------------------------------- every time a schedule names can be stored

_NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


def _representable(when: datetime) -> None:
    """A fire time toolrig stores as a float and reads back with ``fromtimestamp``."""
    assert datetime.fromtimestamp(when.timestamp(), UTC) == when


@settings(max_examples=300)
@given(
    st.one_of(
        st.builds(lambda n, u: f"{n}{u}", st.integers(0, 999_999_999), st.sampled_from("smhd")),
        st.builds(lambda n, u: f"+{n}{u}", st.integers(0, 999_999_999), st.sampled_from("mh")),
        st.builds(
            lambda y, off: f"{y:04d}-12-31T23:59:59{off}",
            st.integers(1, 9999),
            st.sampled_from(["", "Z", "+23:59", "-23:59", "+00:00"]),
        ),
    )
)
def test_a_schedule_with_any_number_parses_to_storable_times_or_is_refused(text: str) -> None:
    try:
        parsed = parse_schedule(text, now=_NOW)
    except ScheduleError:
        return
    for when in parsed.next_times(_NOW, 2):
        _representable(when)
    if parsed.at is not None:
        _representable(parsed.at)


@settings(max_examples=100)
@given(
    text=st.sampled_from(["+5m", "+2h", "1d", "30s", "0 9 * * *", "2026-05-01T09:00", "9999-12-31T23:59"]),
    now=st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(9999, 12, 31, 23, 59), timezones=st.just(UTC)),
)
@example(text="+5m", now=datetime(9999, 12, 31, 23, 58, tzinfo=UTC))
@example(text="1d", now=datetime(9999, 12, 30, tzinfo=UTC))
def test_a_schedule_counted_from_any_instant_parses_or_is_refused(text: str, now: datetime) -> None:
    """`toolrig cron next --from` takes any ISO time, up to the last one a datetime holds."""
    try:
        parsed = parse_schedule(text, now=now)
    except ScheduleError:
        return
    for when in parsed.next_times(now, 2):
        assert when > now


@pytest.mark.parametrize("text", ["999999999d", "+999999999h", "9999-12-31T23:59:59-23:59", "0001-01-01T00:00+01:00"])
def test_a_schedule_beyond_what_a_date_holds_is_refused_as_out_of_range(text: str) -> None:
    with pytest.raises(OutOfRange):
        parse_schedule(text, now=_NOW)


@pytest.mark.parametrize("text", ["0 0 30 2 *", "0 0 31 4 *", "0 0 31 2 * Europe/Paris"])
def test_a_cron_line_no_date_ever_matches_is_refused_when_given(text: str) -> None:
    with pytest.raises(ScheduleError, match="never fires"):
        parse_schedule(text, now=_NOW)


def test_a_stored_schedule_past_the_last_date_ends_its_times_instead_of_raising() -> None:
    # A row written before schedules were bounded: reading it back must not break the worker or a listing.
    from toolrig.durable.schedule import Schedule

    old = Schedule("999999999d", "every", seconds=999_999_999 * 86_400)
    assert old.next_times(_NOW, 3) == []
    never = Schedule("0 0 30 2 *", "cron", expression="0 0 30 2 *")
    assert never.next_times(_NOW, 1) == []
