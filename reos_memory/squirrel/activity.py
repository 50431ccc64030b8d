"""A store's activity, day by day (`squirrel/activity`, the web UI's Activity page): the one
assembly of what the local store and the team server count."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from reos_memory.squirrel import api


def day_range(days: int) -> list[str]:
    """The last `days` UTC days, oldest first, today last (YYYY-MM-DD)."""
    today = datetime.now(UTC).date()
    return [(today - timedelta(days=n)).isoformat() for n in range(days - 1, -1, -1)]


def assemble(
    project_id: str | None, days: list[str], counted: dict[str, Any]
) -> api.ActivityResult:
    """Every day of `days` (zeros included) from what a store counted: `memories` (day, kind,
    n) rows, `contexts` {day: (contexts, injections)}, `calls` {day: (calls, tokens in, tokens
    out)} and `live` {kind: n}."""
    by_day: dict[str, dict[str, int]] = {d: {} for d in days}
    for day, kind, n in counted["memories"]:
        if day in by_day:
            by_day[day][kind] = int(n)
    out = []
    for d in days:
        contexts, injections = counted["contexts"].get(d, (0, 0))
        calls, tin, tout = counted["calls"].get(d, (0, 0, 0))
        day = api.ActivityDay(
            day=d, memories=by_day[d], contexts=contexts, injections=injections,
            writer_calls=calls, input_tokens=tin, output_tokens=tout,
        )  # fmt: skip
        out.append(day)
    return api.ActivityResult(project_id=project_id, days=out, live_by_kind=counted["live"])
