"""Time in a query: "in May 2023", "on 8 May 2023", "2023-05-08", "in 2023", "yesterday",
"last week", "3 days ago", "before June 2023", "since 2024" ... as a window of creation times.

Search ranks the candidates written inside the window higher (it filters nothing out: a time
phrase may be about the subject, not about when it was written).
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

MONTHS = {
    name.lower(): i
    for i in range(1, 13)
    for name in (calendar.month_name[i], calendar.month_abbr[i])
}
MONTHS["sept"] = 9
_MONTH = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d{2})"
_EDGE = r"(?:(before|until|till|prior to|after|since)\s+)?"

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("iso", re.compile(_EDGE + r"\b" + _YEAR + r"-(\d{2})-(\d{2})\b", re.I)),
    (
        "day_month_year",
        re.compile(
            _EDGE + r"\b" + _DAY + r"\s+(?:of\s+)?" + _MONTH + r",?\s+" + _YEAR + r"\b", re.I
        ),
    ),
    (
        "month_day_year",
        re.compile(_EDGE + r"\b" + _MONTH + r"\s+" + _DAY + r",?\s+" + _YEAR + r"\b", re.I),
    ),
    ("month_year", re.compile(_EDGE + r"\b" + _MONTH + r",?\s+(?:of\s+)?" + _YEAR + r"\b", re.I)),
    ("year", re.compile(r"(?:\b(in|during|of|before|until|after|since)\s+)" + _YEAR + r"\b", re.I)),
    (
        "relative",
        re.compile(
            r"\b(yesterday|today|this (?:week|month|year)|last (?:week|month|year))\b", re.I
        ),
    ),
    (
        "ago",
        re.compile(
            r"\b(\d{1,3}|a|an|one|two|three|four|five|six|seven)\s+(day|week|month|year)s?\s+ago\b",
            re.I,
        ),
    ),
]
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
}
_BEFORE = ("before", "until", "till", "prior to")
_AFTER = ("after", "since")


@dataclass(frozen=True)
class Window:
    """[start, end) in UTC; None for an open side. `phrase` is what the query said."""

    start: datetime | None
    end: datetime | None
    phrase: str

    def contains(self, t: datetime) -> bool:
        return (self.start is None or t >= self.start) and (self.end is None or t < self.end)


def _month_end(year: int, month: int) -> datetime:
    return datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)


def _span(kind: str, g: tuple[str, ...]) -> tuple[datetime, datetime] | None:
    try:
        if kind == "iso":
            start = datetime(int(g[1]), int(g[2]), int(g[3]), tzinfo=UTC)
            return start, start + timedelta(days=1)
        if kind == "day_month_year":
            start = datetime(int(g[3]), MONTHS[g[2].lower()[:3]], int(g[1]), tzinfo=UTC)
            return start, start + timedelta(days=1)
        if kind == "month_day_year":
            start = datetime(int(g[3]), MONTHS[g[1].lower()[:3]], int(g[2]), tzinfo=UTC)
            return start, start + timedelta(days=1)
        if kind == "month_year":
            month = MONTHS[g[1].lower()[:3]]
            return datetime(int(g[2]), month, 1, tzinfo=UTC), _month_end(int(g[2]), month)
        if kind == "year":
            year = int(g[1])
            return datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC)
    except (ValueError, KeyError):
        return None  # "31 February": not a date
    return None


def _relative(text: str, now: datetime) -> tuple[datetime, datetime]:
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    week = today - timedelta(days=today.weekday())
    month = today.replace(day=1)
    t = text.lower()
    if t == "yesterday":
        return today - timedelta(days=1), today
    if t == "today":
        return today, today + timedelta(days=1)
    if t == "this week":
        return week, week + timedelta(days=7)
    if t == "last week":
        return week - timedelta(days=7), week
    if t == "this month":
        return month, _month_end(month.year, month.month)
    if t == "last month":
        prev = (month - timedelta(days=1)).replace(day=1)
        return prev, month
    if t == "this year":
        return today.replace(month=1, day=1), today.replace(year=today.year + 1, month=1, day=1)
    return today.replace(year=today.year - 1, month=1, day=1), today.replace(month=1, day=1)


def _ago(count: str, unit: str, now: datetime) -> tuple[datetime, datetime]:
    n = int(count) if count.isdigit() else _NUMBERS[count.lower()]
    days = {"day": 1, "week": 7, "month": 30, "year": 365}[unit.lower()] * n
    center = now - timedelta(days=days)
    slack = timedelta(days=max(1.0, days * 0.15))  # "three weeks ago" is not one exact day
    return center - slack, center + slack


def window(query: str, now: datetime | None = None) -> Window | None:
    """The first time phrase of the query as a window, or None."""
    now = now or datetime.now(UTC)
    found: list[tuple[int, Window]] = []
    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(query):
            g = m.groups()
            if kind == "relative":
                start, end = _relative(g[0], now)
                found.append((m.start(), Window(start, end, m.group(0))))
                continue
            if kind == "ago":
                start, end = _ago(g[0], g[1], now)
                found.append((m.start(), Window(start, end, m.group(0))))
                continue
            span = _span(kind, g)
            if span is None:
                continue
            edge = (g[0] or "").lower()
            if edge in _BEFORE:
                found.append((m.start(), Window(None, span[0], m.group(0))))
            elif edge in _AFTER:
                found.append(
                    (m.start(), Window(span[1] if edge == "after" else span[0], None, m.group(0)))
                )
            else:
                found.append((m.start(), Window(span[0], span[1], m.group(0))))
    if not found:
        return None
    # the most specific phrase at the earliest place: a day inside "8 May 2023" beats the month
    found.sort(key=lambda f: (f[0], -len(f[1].phrase)))
    return found[0][1]
