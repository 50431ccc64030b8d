"""Time phrases in queries, as windows of creation times (graph/when.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from reos_memory.graph.when import window

NOW = datetime(2026, 11, 22, 15, 0, tzinfo=UTC)  # a Sunday


def d(*a: int) -> datetime:
    return datetime(*a, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("What did we decide in May 2023?", d(2023, 5, 1), d(2023, 6, 1)),
        ("on 8 May, 2023 what happened", d(2023, 5, 8), d(2023, 5, 9)),
        ("the May 8th, 2023 meeting", d(2023, 5, 8), d(2023, 5, 9)),
        ("notes from 2023-05-08", d(2023, 5, 8), d(2023, 5, 9)),
        ("what happened in 2023", d(2023, 1, 1), d(2024, 1, 1)),
        ("in December 2023", d(2023, 12, 1), d(2024, 1, 1)),
        ("sept 2023", d(2023, 9, 1), d(2023, 10, 1)),
        ("before June 2023 was it settled", None, d(2023, 6, 1)),
        ("since 2024 who joined", d(2024, 1, 1), None),
        ("after 3 March 2023", d(2023, 3, 4), None),
        ("what did I say yesterday", d(2026, 11, 21), d(2026, 11, 22)),
        ("what broke today", d(2026, 11, 22), d(2026, 11, 23)),
        ("last week's deploy", d(2026, 11, 9), d(2026, 11, 16)),
        ("this month so far", d(2026, 11, 1), d(2026, 12, 1)),
        ("last month's invoices", d(2026, 10, 1), d(2026, 11, 1)),
        ("last year", d(2025, 1, 1), d(2026, 1, 1)),
    ],
)
def test_windows(query: str, start: datetime | None, end: datetime | None) -> None:
    w = window(query, NOW)
    assert w is not None and (w.start, w.end) == (start, end), w


def test_ago_is_a_window_around_that_time() -> None:
    w = window("the bug we fixed three weeks ago", NOW)
    assert w is not None and w.start is not None and w.end is not None
    assert w.contains(d(2026, 11, 1)) and not w.contains(d(2026, 11, 15))


@pytest.mark.parametrize(
    "query",
    [
        "how are authentication tokens stored?",
        "the 2000 patients in the trial",  # a number, not a year in a time phrase
        "Python 3.11 changes",
        "May I ask about the schedule",  # a month name alone is not a time
        "31 February",
    ],
)
def test_no_time_phrase(query: str) -> None:
    assert window(query, NOW) is None
