from __future__ import annotations

from pathlib import Path

from toolrig.policy.audit import AuditLog, AuditRow


def last_row(workspace: Path) -> AuditRow:
    log = AuditLog(workspace / ".toolrig")
    try:
        return log.query(limit=1)[-1]
    finally:
        log.close()
