"""The schedule grammar of jobs and tasks: intervals, 5-field cron with a zone, one-shots, timestamps.

Cron arithmetic is croniter's (Vixie semantics: day-of-month and day-of-week, both restricted, fire on
either; a time skipped by a DST change fires at the first instant after it, a repeated one fires twice).
This module only decides which form a text is and refuses everything else with the accepted forms listed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

ACCEPTED_FORMS = (
    "'30s', '15m', '2h', '1d' (every N seconds, minutes, hours, days); "
    "a 5-field cron expression with an optional IANA zone ('0 9 * * 1-5' or '0 9 * * 1-5 Europe/Paris'); "
    "'+20m' or '+2h' (once, that long from now); "
    "an ISO 8601 time such as '2026-05-01T09:00' or '2026-05-01T09:00+02:00' (once; naive means the job's zone)"
)
_EVERY = re.compile(r"^(\d{1,9})([smhd])$")
_RELATIVE = re.compile(r"^\+(\d{1,9})([mh])$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_MAX_TEXT = 200
# The farthest a schedule reaches: a period, a delay or a one-shot time. Beyond it a number still parses but
# the date does not exist (year 10000) or is never reached; each would fail later, where it is read back.
MAX_AHEAD = timedelta(days=36_525)  # 100 years
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ZONE_TEXT = re.compile(r"^[A-Za-z][A-Za-z0-9_+\-]*(?:/[A-Za-z0-9_+\-]+){0,2}$")
_CRON_FIELD = re.compile(r"^[0-9A-Za-z*/,\-?LW#]+$")

Kind = Literal["every", "cron", "once"]


class ScheduleError(ValueError):
    """A schedule text that is none of the accepted forms; the message lists them."""


class OutOfRange(ScheduleError):
    """A schedule or time of an accepted form that names an instant toolrig cannot store (see ``check_instant``)."""


@dataclass(frozen=True, slots=True)
class Schedule:
    """A parsed schedule. ``once`` carries its instant; ``every`` its period; ``cron`` its expression and zone."""

    text: str
    kind: Kind
    zone: str = "UTC"
    seconds: int = 0  # every
    expression: str = ""  # cron
    at: datetime | None = None  # once (aware)
    anchor: float = 0.0  # every: the grid starts here (when the job was added), as a Unix time

    @property
    def one_shot(self) -> bool:
        return self.kind == "once"

    def times(self, after: datetime) -> Iterator[datetime]:
        """Fire times strictly after ``after`` (aware), in order, as aware datetimes in the schedule's zone.

        The times end (rather than raise) where a date can no longer be represented or croniter finds none: a
        schedule stored before its text was bounded must not break whoever reads it back.
        """
        zone = _zone(self.zone)
        if self.kind == "once":
            if self.at is not None and self.at > after:
                yield self.at.astimezone(zone)
            return
        if self.kind == "every":
            # Counted from when the job was added (seed 000: '2d' added at 09:00 fires at 09:00 two days on), and
            # every worker computes the same grid: the anchor is the job's stored creation time.
            step = self.seconds
            n = int((after.timestamp() - self.anchor) // step) + 1
            while True:
                try:
                    yield datetime.fromtimestamp(self.anchor + n * step, zone)
                except (OverflowError, ValueError, OSError):
                    return
                n += 1
        from croniter import CroniterBadDateError, croniter

        it = croniter(self.expression, after.astimezone(zone), day_or=True)
        while True:
            try:
                when = it.get_next(datetime)
            except (CroniterBadDateError, OverflowError, ValueError):
                return
            yield when

    def next_times(self, after: datetime, count: int) -> list[datetime]:
        out: list[datetime] = []
        for when in self.times(after):
            if len(out) >= count:
                break
            out.append(when)
        return out


def _zone(name: str) -> tzinfo:
    if name == "UTC":
        return UTC
    return ZoneInfo(name)


def check_zone(name: str) -> str:
    """An IANA zone name, or ScheduleError; never a path (ZoneInfo reads files named by the key)."""
    if not _ZONE_TEXT.match(name) or ".." in name:
        raise ScheduleError(f"{name!r} is not an IANA time zone name (like 'Europe/Paris' or 'UTC')")
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ScheduleError(f"{name!r} is not a known IANA time zone (like 'Europe/Paris' or 'UTC')") from None
    return name


def check_instant(at: datetime, now: datetime, text: object) -> datetime:
    """``at`` when it is an instant toolrig can store and read back (from 1970 to ``MAX_AHEAD`` after ``now``).

    Every time a schedule or a task's ``after`` names goes through here, so one that parses but could never be
    represented as a timestamp and back (``+99999999999s``, ``9999-12-31T23:59-23:59``) is refused as it is given.
    """
    try:
        if _EPOCH <= at <= now + MAX_AHEAD:
            return at
    except (OverflowError, ValueError):
        pass
    raise OutOfRange(f"{repr(text)[:80]} is out of range: a time must be after 1970 and at most 100 years from now.")


def parse_schedule(text: str, *, zone: str = "UTC", now: datetime | None = None) -> Schedule:
    """Parse ``text`` in the job's ``zone``; ``now`` anchors the relative forms (``+20m``) and the range check."""
    zone = check_zone(zone)
    now = now or datetime.now(UTC)
    if not isinstance(text, str) or len(text) > _MAX_TEXT or not text.strip():
        raise _refuse(text)
    cleaned = " ".join(text.split())
    match = _EVERY.match(cleaned)
    if match:
        seconds = int(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        if seconds <= 0:
            raise ScheduleError(f"{text!r}: the period must be at least 1 second. Accepted forms: {ACCEPTED_FORMS}")
        if seconds > MAX_AHEAD.total_seconds():
            raise OutOfRange(f"{text!r}: the period must be at most 100 years ({int(MAX_AHEAD.days)}d).")
        return Schedule(cleaned, "every", zone, seconds=seconds, anchor=now.timestamp())
    match = _RELATIVE.match(cleaned)
    if match:
        delta = timedelta(seconds=int(match.group(1)) * _UNIT_SECONDS[match.group(2)])
        if delta > MAX_AHEAD:
            raise OutOfRange(f"{text!r}: a delay must be at most 100 years.")
        try:
            at = now + delta
        except OverflowError:  # a 'now' (cron next --from) near the last date there is
            raise OutOfRange(f"{text!r} from {now.isoformat()} is out of range.") from None
        at = check_instant(at, now, text).astimezone(_zone(zone))
        return Schedule(at.isoformat(), "once", zone, at=at)  # stored resolved: re-reading it later must not move it
    fields = cleaned.split(" ")
    if len(fields) in (5, 6):
        return _cron(text, fields, zone, now)
    if len(fields) == 1 and cleaned[:1].isdigit():
        return _timestamp(text, cleaned, zone, now)
    raise _refuse(text)


def _cron(text: str, fields: list[str], zone: str, now: datetime) -> Schedule:
    from croniter import croniter

    if len(fields) == 6:
        zone = check_zone(fields[5])
        fields = fields[:5]
    if not all(_CRON_FIELD.match(f) for f in fields):
        raise _refuse(text)
    expression = " ".join(fields)
    try:
        valid = croniter.is_valid(expression)
    except Exception:  # croniter raises assorted types on odd input; any of them means "not a cron line"
        valid = False
    if not valid:
        raise ScheduleError(f"{text!r} is not a valid 5-field cron expression. Accepted forms: {ACCEPTED_FORMS}")
    schedule = Schedule(
        " ".join([expression, zone]) if zone != "UTC" else expression, "cron", zone, expression=expression
    )
    if not schedule.next_times(now, 1):  # '0 0 30 2 *': valid field by field, yet no such day ever comes
        raise ScheduleError(f"{text!r} never fires (no date matches every field).")
    return schedule


def _timestamp(text: str, cleaned: str, zone: str, now: datetime) -> Schedule:
    try:
        at = datetime.fromisoformat(cleaned)
    except ValueError:
        raise _refuse(text) from None
    if at.tzinfo is None:
        at = at.replace(tzinfo=_zone(zone))
    check_instant(at, now, text)
    return Schedule(at.isoformat(), "once", zone, at=at)


def _refuse(text: object) -> ScheduleError:
    shown = repr(text)[:80]
    return ScheduleError(f"{shown} is not a schedule. Accepted forms: {ACCEPTED_FORMS}")
