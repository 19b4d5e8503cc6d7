"""Jobs: what fires when, who may change it, and turning a due firing into exactly one task.

Rules: config jobs mirror the trusted config and are read-only to the tool; runtime jobs a model creates
expire after ``model_job_days`` unless a person renews them; at most ``max_jobs`` runtime jobs. A firing is
owned by the one worker whose compare-and-set of ``next_fire_at`` matched, and recorded as a task whose id
is the job id and fire time, so even a second writer could not record it twice.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from toolrig.durable.api import DurableError
from toolrig.durable.schedule import Schedule, ScheduleError, parse_schedule
from toolrig.durable.store import Records

if TYPE_CHECKING:
    from toolrig.config import CronJobConfig, WorkersConfig

PREVIEW = 80
MAX_PROMPT = 20_000


@dataclass(frozen=True, slots=True)
class Firing:
    job_id: str
    task_id: str
    at: float
    status: str  # queued | missed | skipped


def _aware(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, UTC)


def config_job_id(name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:40] or "job"
    return f"config-{slug}-{hashlib.sha256(name.encode()).hexdigest()[:6]}"


# A job id a caller chooses: it names the job in task ids (ID@time), on command lines and in logs.
_JOB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class JobBook:
    def __init__(self, records: Records, settings: WorkersConfig) -> None:
        self.records = records
        self.settings = settings

    # ------------------------------------------------------------------ reading

    def parsed(self, job: dict[str, Any], now: float | None = None) -> Schedule:
        return parse_schedule(job["schedule"], zone=job["zone"], now=_aware(job["created_at"] if now is None else now))

    def live(self, now: float | None = None) -> list[dict[str, Any]]:
        """Every live job; expired model jobs are dropped on the way."""
        now = time.time() if now is None else now
        out = []
        for job in self.records.jobs():
            if job["expires_at"] is not None and job["expires_at"] <= now:
                self.records.delete_job(job["id"])
                continue
            out.append(job)
        return out

    def get(self, job_id: str) -> dict[str, Any]:
        job = self.records.job(job_id) if isinstance(job_id, str) and len(job_id) <= 64 else None
        if job is None:
            raise DurableError(
                "not_found", f"No job with id {job_id!r}.", "List the jobs (action 'list') for their ids."
            )
        return job

    def view(self, job: dict[str, Any]) -> dict[str, Any]:
        """The tool's and CLI's row: id, name, schedule, source, enabled, running, last run, prompt preview."""
        last = self.records.tasks(job_id=job["id"], limit=1)
        running = self.records.count_open_for_job(job["id"]) > 0
        prompt = job["prompt"]
        return {
            "id": job["id"],
            "name": job["name"],
            "schedule": job["schedule"],
            "timezone": job["zone"],
            "source": job["source"],
            "enabled": job["enabled"],
            "running": running,
            "next_run": _aware(job["next_fire_at"]).isoformat() if job["next_fire_at"] else None,
            "last_run": _aware(last[0]["created_at"]).isoformat() if last else None,
            "last_status": last[0]["status"] if last else None,
            "expires": _aware(job["expires_at"]).isoformat() if job["expires_at"] else None,
            "prompt_preview": prompt if len(prompt) <= PREVIEW else prompt[: PREVIEW - 1] + "…",
        }

    # ------------------------------------------------------------------ changing

    def add(
        self,
        *,
        name: str | None,
        schedule: str,
        prompt: str,
        by: str,
        agent: str | None = None,
        zone: str = "UTC",
        retries: int = 0,
        now: float | None = None,
        job_id: str | None = None,
    ) -> dict[str, Any]:
        """A runtime job; ``job_id`` kept when given (seed 000), and the name defaults to the id."""
        now = time.time() if now is None else now
        job_id = self._new_id(job_id)
        name = job_id if name is None or not name.strip() else name
        if not name.strip() or len(name) > 200:
            raise DurableError("invalid", "A job needs a name of 1 to 200 characters.")
        if not prompt.strip() or len(prompt) > MAX_PROMPT:
            raise DurableError("invalid", f"A job needs a prompt of 1 to {MAX_PROMPT} characters.")
        parsed = self._parse(schedule, zone, now)
        live = self.live(now)
        if by == "model":
            self._model_limits(parsed, live, agent, now)
        runtime = [j for j in live if j["source"] == "runtime"]
        if len(runtime) >= self.settings.max_jobs:
            raise DurableError(
                "limit",
                f"There are already {len(runtime)} runtime jobs, the most allowed ({self.settings.max_jobs}).",
                "Remove a job you no longer need first.",
            )
        first = self._next(parsed, now)
        if first is None:
            raise DurableError("invalid", f"{schedule!r} is in the past: it would never fire.", "Give a future time.")
        job = {
            "id": job_id,
            "name": name.strip(),
            "schedule": parsed.text,
            "zone": parsed.zone,
            "prompt": prompt,
            "agent": agent,
            "source": "runtime",
            "created_by": by,
            "created_at": now,
            "expires_at": now + self.settings.model_job_days * 86400 if by == "model" else None,
            "enabled": True,
            "one_shot": parsed.one_shot,
            "retries": retries,
            "next_fire_at": first,
        }
        self.records.insert_job(job)
        return job

    def _new_id(self, wanted: str | None) -> str:
        if wanted is None:
            return "j-" + secrets.token_hex(5)
        if not _JOB_ID.fullmatch(wanted):
            raise DurableError(
                "invalid",
                f"{wanted[:80]!r} cannot be a job id.",
                "Use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit; or give no id.",
            )
        if self.records.job(wanted) is not None:
            raise DurableError("limit", f"A job with id {wanted!r} exists already.", "Pick another id, or remove it.")
        return wanted

    def remove(self, job_id: str, *, by: str) -> dict[str, Any]:
        job = self.get(job_id)
        if job["source"] == "config":
            raise DurableError(
                "forbidden",
                f"Job {job_id!r} ({job['name']}) comes from the configuration; it cannot be removed here.",
                "Ask a person to edit the `cron:` section of the config to change or remove it.",
            )
        self.records.delete_job(job_id)
        return job

    def renew(self, job_id: str) -> dict[str, Any]:
        """A person vouches for a model's job: it no longer expires."""
        job = self.get(job_id)
        self.records.update_job(
            job_id, expires_at=None, created_by="person" if job["created_by"] == "model" else job["created_by"]
        )
        return self.get(job_id)

    def sync_config(self, configured: list[CronJobConfig], now: float | None = None) -> None:
        """Mirror the trusted config's jobs: add new ones, update changed ones, drop removed ones."""
        now = time.time() if now is None else now
        wanted: dict[str, CronJobConfig] = {config_job_id(c.name): c for c in configured}
        existing = {j["id"]: j for j in self.records.jobs() if j["source"] == "config"}
        for job_id in existing.keys() - wanted.keys():
            self.records.delete_job(job_id)
        for job_id, cfg in wanted.items():
            parsed = self._parse(cfg.schedule, cfg.timezone, now)
            row = {
                "name": cfg.name,
                "schedule": parsed.text,
                "zone": parsed.zone,
                "prompt": cfg.prompt,
                "agent": cfg.agent,
                "enabled": cfg.enabled,
                "one_shot": parsed.one_shot,
                "retries": cfg.retries,
            }
            old = existing.get(job_id)
            if old is None:
                self.records.insert_job(
                    {
                        **row,
                        "id": job_id,
                        "source": "config",
                        "created_by": "config",
                        "created_at": now,
                        "expires_at": None,
                        "next_fire_at": self._next(parsed, now),
                    }
                )
            elif any(old[k] != v for k, v in row.items()):
                # The grid of an 'every' schedule stays counted from when the job was first added.
                self.records.update_job(job_id, **row, next_fire_at=self._next(self.parsed({**old, **row}), now))

    # ------------------------------------------------------------------ firing

    def fire_due(self, now: float | None = None) -> list[Firing]:
        """Record every due firing as one task (or as missed/skipped); called by every worker's poll."""
        now = time.time() if now is None else now
        fired: list[Firing] = []
        for job in self.live(now):
            at = job["next_fire_at"]
            if at is None or at > now:
                continue
            parsed = self.parsed(job)
            # Slots that passed while nobody polled are folded into this one firing (no burst of catch-up runs).
            following = None if parsed.one_shot else self._next(parsed, max(at, now))
            if not self.records.advance_job(job["id"], at, following):
                continue  # another worker owns this firing
            task_id = f"{job['id']}@{int(at * 1000)}"
            if not job["enabled"]:
                continue
            status = "queued"
            note = None
            if now - at > self.settings.misfire_grace_seconds:
                status, note = "missed", f"noticed {now - at:.0f}s late, past the misfire grace period"
            elif self.records.count_open_for_job(job["id"]) > 0:
                status, note = "skipped", "the previous run of this job had not finished"
            inserted = self.records.insert_task(
                {
                    "id": task_id,
                    "kind": "cron",
                    "job_id": job["id"],
                    "prompt": job["prompt"],
                    "agent": job["agent"],
                    "status": status,
                    "created_at": now,
                    "not_before": at,
                    "fire_time": at,
                    "attempt": 1,
                    "retries_left": job["retries"],
                    "result": note,
                    "ended_at": now if note else None,
                    "created_by": "schedule",
                }
            )
            if inserted:
                fired.append(Firing(job["id"], task_id, at, status))
            if parsed.one_shot and status != "queued":
                self.records.delete_job(job["id"])
        return fired

    def _model_limits(self, parsed: Schedule, live: list[dict[str, Any]], agent: str | None, now: float) -> None:
        """A model's schedule fires at most every ``model_min_interval_seconds``; an agent holds ``model_max_jobs``.

        Each firing is a full agent run that nothing asks about under the default approvals: without a floor
        and a budget a model could start fifty runs a second on the user's account.
        """
        floor = self.settings.model_min_interval_seconds
        times = [t.timestamp() for t in parsed.next_times(_aware(now), 8)] if not parsed.one_shot else []
        gap = min((b - a for a, b in pairwise(times)), default=None)
        if gap is not None and gap < floor:
            raise DurableError(
                "invalid",
                f"{parsed.text!r} fires every {gap:g} seconds; a schedule you create may fire at most every "
                f"{floor:g} seconds (workers.model_min_interval_seconds).",
                f"Use a longer interval, e.g. '{max(int(floor), 1)}s', or a cron expression by the minute or slower.",
            )
        mine = [j for j in live if j["created_by"] == "model" and j["agent"] == agent]
        if len(mine) >= self.settings.model_max_jobs:
            raise DurableError(
                "limit",
                f"You already have {len(mine)} scheduled jobs, the most an agent may create "
                f"({self.settings.model_max_jobs}, workers.model_max_jobs).",
                "Remove one you no longer need first (cron action 'remove'), or ask the user to raise the limit.",
            )

    def _parse(self, schedule: str, zone: str, now: float) -> Schedule:
        try:
            return parse_schedule(schedule, zone=zone, now=_aware(now))
        except ScheduleError as exc:
            raise DurableError("invalid", str(exc), "Use one of the accepted schedule forms.") from None

    @staticmethod
    def _next(parsed: Schedule, after: float) -> float | None:
        times = parsed.next_times(_aware(after), 1)
        return times[0].timestamp() if times else None
