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
_ZONE_TEXT = re.compile(r"^[A-Za-z][A-Za-z0-9_+\-]*(?:/[A-Za-z0-9_+\-]+){0,2}$")
_CRON_FIELD = re.compile(r"^[0-9A-Za-z*/,\-?LW#]+$")

Kind = Literal["every", "cron", "once"]


class ScheduleError(ValueError):
    """A schedule text that is none of the accepted forms; the message lists them."""


@dataclass(frozen=True, slots=True)
class Schedule:
    """A parsed schedule. ``once`` carries its instant; ``every`` its period; ``cron`` its expression and zone."""

    text: str
    kind: Kind
    zone: str = "UTC"
    seconds: int = 0  # every
    expression: str = ""  # cron
    at: datetime | None = None  # once (aware)

    @property
    def one_shot(self) -> bool:
        return self.kind == "once"

    def times(self, after: datetime) -> Iterator[datetime]:
        """Fire times strictly after ``after`` (aware), in order, as aware datetimes in the schedule's zone."""
        zone = _zone(self.zone)
        if self.kind == "once":
            if self.at is not None and self.at > after:
                yield self.at.astimezone(zone)
            return
        if self.kind == "every":
            # Anchored on the Unix epoch, so every worker computes the same grid whatever its start time.
            step = self.seconds
            epoch = after.timestamp()
            n = int(epoch // step) + 1
            while True:
                yield datetime.fromtimestamp(n * step, zone)
                n += 1
        from croniter import croniter

        it = croniter(self.expression, after.astimezone(zone), day_or=True)
        while True:
            yield it.get_next(datetime)

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


def parse_schedule(text: str, *, zone: str = "UTC", now: datetime | None = None) -> Schedule:
    """Parse ``text`` in the job's ``zone``; ``now`` anchors the relative forms (``+20m``)."""
    zone = check_zone(zone)
    if not isinstance(text, str) or len(text) > _MAX_TEXT or not text.strip():
        raise _refuse(text)
    cleaned = " ".join(text.split())
    match = _EVERY.match(cleaned)
    if match:
        seconds = int(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        if seconds <= 0:
            raise ScheduleError(f"{text!r}: the period must be at least 1 second. Accepted forms: {ACCEPTED_FORMS}")
        return Schedule(cleaned, "every", zone, seconds=seconds)
    match = _RELATIVE.match(cleaned)
    if match:
        base = now or datetime.now(UTC)
        delta = timedelta(seconds=int(match.group(1)) * _UNIT_SECONDS[match.group(2)])
        at = (base + delta).astimezone(_zone(zone))
        return Schedule(at.isoformat(), "once", zone, at=at)  # stored resolved: re-reading it later must not move it
    fields = cleaned.split(" ")
    if len(fields) in (5, 6):
        return _cron(text, fields, zone)
    if len(fields) == 1 and cleaned[:1].isdigit():
        return _timestamp(text, cleaned, zone)
    raise _refuse(text)


def _cron(text: str, fields: list[str], zone: str) -> Schedule:
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
    return Schedule(" ".join([expression, zone]) if zone != "UTC" else expression, "cron", zone, expression=expression)


def _timestamp(text: str, cleaned: str, zone: str) -> Schedule:
    try:
        at = datetime.fromisoformat(cleaned)
    except ValueError:
        raise _refuse(text) from None
    if at.tzinfo is None:
        at = at.replace(tzinfo=_zone(zone))
    return Schedule(at.isoformat(), "once", zone, at=at)


def _refuse(text: object) -> ScheduleError:
    shown = repr(text)[:80]
    return ScheduleError(f"{shown} is not a schedule. Accepted forms: {ACCEPTED_FORMS}")
