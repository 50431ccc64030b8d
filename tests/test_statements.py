"""Squirrel's rules writer: explicit statements and corrections in realistic user messages."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from reos_memory.squirrel.text.statements import Statement, corrections, explicit_statements
from reos_memory.squirrel.text.tool_names import TOOL_CATEGORIES, mentioned_tools, tool_category
from reos_memory.squirrel.text.tool_switches import switch_between, switch_in

# (message, [(text, kind, polarity, scope, key), ...]); text None = not checked
EXPLICIT_CASES: list[tuple[str, list[tuple[str | None, str, int, str, str | None]]]] = [
    # the example from the brief: one statement about the package-manager slot
    (
        "from now on use pnpm, never npm lol",
        [
            (
                "Use pnpm for package management in this project; never use npm.",
                "guard",
                -1,
                "project",
                "project.package_manager",
            )
        ],
    ),
    (
        "Always use httpx; never requests.",
        [
            (
                "Use httpx as the HTTP client in this project; never use requests.",
                "guard",
                -1,
                "project",
                "project.http_client",
            )
        ],
    ),
    (
        "Going forward, use pnpm. Never npm or yarn.",
        [
            (
                "Use pnpm for package management in this project; never use npm or yarn.",
                "guard",
                -1,
                "project",
                "project.package_manager",
            )
        ],
    ),
    (
        "In this repo we use poetry.",
        [
            (
                "Use poetry for package management in this project.",
                "invariant",
                1,
                "project",
                "project.package_manager",
            )
        ],
    ),
    (
        "Our test runner is vitest.",
        [
            (
                "Use vitest to run tests in this project.",
                "invariant",
                1,
                "project",
                "project.test_runner",
            )
        ],
    ),
    (
        "we've switched from yarn to pnpm",
        [
            (
                "Use pnpm instead of yarn for package management in this project.",
                "invariant",
                1,
                "project",
                "project.package_manager",
            )
        ],
    ),
    (
        "prefer httpx over requests",
        [
            (
                "Prefer httpx over requests as the HTTP client in this project.",
                "preference",
                1,
                "project",
                "project.http_client",
            )
        ],
    ),
    (
        "I always use uv for Python projects.",
        [
            (
                "Use uv for package management in all projects.",
                "preference",
                1,
                "global",
                "user.pref.package_manager",
            )
        ],
    ),
    (
        "We use FastAPI with SQLAlchemy and Postgres.",
        [
            (
                "Use FastAPI with SQLAlchemy and Postgres in this project.",
                "invariant",
                1,
                "project",
                None,
            )
        ],
    ),
    (
        "we don't use requests in this codebase",
        [("Do not use requests in this project.", "guard", -1, "project", None)],
    ),
    (
        "Never use requests for the Stripe calls, it breaks SSL.",
        [("Never use requests for the Stripe calls, it breaks SSL.", "guard", -1, "project", None)],
    ),
    # rules without tools
    (
        "never push directly to main",
        [("Never push directly to main.", "guard", -1, "project", None)],
    ),
    ("don't ever commit .env files", [("Never commit .env files.", "guard", -1, "project", None)]),
    (
        "Do not modify the generated files in src/gen/.",
        [("Do not modify the generated files in src/gen/.", "guard", -1, "project", None)],
    ),
    (
        "please stop adding comments to every line",
        [("Stop adding comments to every line.", "guard", -1, "project", None)],
    ),
    (
        "avoid global state in the request handlers",
        [("Avoid global state in the request handlers.", "guard", -1, "project", None)],
    ),
    (
        "going forward, no more print debugging",
        [("No more print debugging.", "guard", -1, "project", None)],
    ),
    (
        "Make sure to always run ruff before committing.",
        [("Always run ruff before committing.", "invariant", 1, "project", None)],
    ),
    (
        "Going forward, run `make lint` before every commit.",
        [("Run `make lint` before every commit.", "invariant", 1, "project", None)],
    ),
    (
        "API keys must never be committed to the repo.",
        [("API keys must never be committed to the repo.", "guard", -1, "project", None)],
    ),
    (
        "tests should never hit the network",
        [("Tests should never hit the network.", "guard", -1, "project", None)],
    ),
    (
        "All API handlers must validate input with pydantic.",
        [("All API handlers must validate input with pydantic.", "invariant", 1, "project", None)],
    ),
    (
        "You should never edit the lockfile by hand.",
        [("Never edit the lockfile by hand.", "guard", -1, "project", None)],
    ),
    (
        "We always squash-merge PRs.",
        [("Always squash-merge PRs.", "invariant", 1, "project", None)],
    ),
    ("We never deploy on Fridays.", [("Never deploy on Fridays.", "guard", -1, "project", None)]),
    (
        "whenever you add a migration, run `make gen` afterwards",
        [
            (
                "Whenever you add a migration, run `make gen` afterwards.",
                "pattern",
                1,
                "project",
                None,
            )
        ],
    ),
    (
        "If the e2e tests fail on CI, never just rerun them.",
        [("If the e2e tests fail on CI, never just rerun them.", "guard", -1, "project", None)],
    ),
    # facts
    (
        "Remember that the staging DB is shared with QA.",
        [("The staging DB is shared with QA.", "invariant", 1, "project", None)],
    ),
    (
        "Note that the API lives in services/api.",
        [("The API lives in services/api.", "invariant", 1, "project", None)],
    ),
    (
        "FYI the prod database is read-only from this machine.",
        [("The prod database is read-only from this machine.", "invariant", 1, "project", None)],
    ),
    (
        "note that the deploy script probably needs root",
        [("The deploy script probably needs root.", "note", 1, "project", None)],
    ),
    (
        "Our main branch is develop, not main.",
        [("The main branch is develop, not main.", "invariant", 1, "project", None)],
    ),
    (
        "The convention here is snake_case for JSON fields.",
        [
            (
                "The convention in this project is snake_case for JSON fields.",
                "invariant",
                1,
                "project",
                None,
            )
        ],
    ),
    (
        "The convention is to put fixtures in conftest.py.",
        [("Put fixtures in conftest.py.", "invariant", 1, "project", None)],
    ),
    (
        "In this project, tests live in tests/unit and tests/e2e.",
        [("Tests live in tests/unit and tests/e2e.", "invariant", 1, "project", None)],
    ),
    (
        "We're on Python 3.12 here, always target python 3.12.",
        [("Always target python 3.12.", "invariant", 1, "project", "project.python_version")],
    ),
    # preferences, global interaction preferences
    (
        "I prefer small, focused commits.",
        [("Prefer small, focused commits.", "preference", 1, "project", None)],
    ),
    (
        "be concise. don't apologize.",
        [
            ("Be concise.", "preference", 1, "global", "user.pref.concise"),
            ("Do not apologize.", "preference", -1, "global", "user.pref.apologies"),
        ],
    ),
    (
        "Ask me before deleting any files.",
        [
            (
                "Ask the user before deleting any files.",
                "guard",
                1,
                "global",
                "user.pref.ask_before_destructive",
            )
        ],
    ),
    (
        "if you're not sure about something, ask me instead of guessing",
        [(None, "preference", 1, "global", "user.pref.ask_when_uncertain")],
    ),
    (
        "never commit without asking me first",
        [
            (
                "Never commit without asking the user first.",
                "guard",
                -1,
                "global",
                "user.pref.ask_before_commit",
            )
        ],
    ),
    (
        "In all my projects I want type hints on every public function.",
        [("The user wants type hints on every public function.", "preference", 1, "global", None)],
    ),
    (
        "I always want you to run the tests before saying you're done.",
        [("Always run the tests before saying you're done.", "preference", 1, "global", None)],
    ),
    (
        "I'd prefer if you didn't add new dependencies without asking.",
        [("Do not add new dependencies without asking.", "guard", -1, "project", None)],
    ),
    (
        "Don't use emojis in commit messages.",
        [("Do not use emojis in commit messages.", "guard", -1, "project", None)],
    ),
    # several rules in one message, a header that makes a list durable
    (
        "From now on:\n- use uv\n- never pip install globally\n- keep functions small",
        [
            (
                "Use uv for package management in this project.",
                "invariant",
                1,
                "project",
                "project.package_manager",
            ),
            ("Never pip install globally.", "guard", -1, "project", None),
            ("Keep functions small.", "invariant", 1, "project", None),
        ],
    ),
    (
        "Always run the linter before pushing and never push to main directly.",
        [
            ("Always run the linter before pushing.", "invariant", 1, "project", None),
            ("Never push to main directly.", "guard", -1, "project", None),
        ],
    ),
    (
        "We used npm before, but from now on use pnpm.",
        [
            (
                "Use pnpm for package management in this project.",
                "invariant",
                1,
                "project",
                "project.package_manager",
            )
        ],
    ),
    (
        "Use pytest, never unittest.",
        [
            (
                "Use pytest to run tests in this project; never use unittest.",
                "guard",
                -1,
                "project",
                "project.test_runner",
            )
        ],
    ),
    (
        "Never use `requests`; always `httpx`.",
        [(None, "guard", -1, "project", "project.http_client")],
    ),
    (
        "We should always use httpx.",
        [
            (
                "Use httpx as the HTTP client in this project.",
                "invariant",
                1,
                "project",
                "project.http_client",
            )
        ],
    ),
    (
        "in this repo, never use default exports",
        [("Never use default exports.", "guard", -1, "project", None)],
    ),
    ("You must not log PII.", [("Do not log PII.", "guard", -1, "project", None)]),
    ("Don't you dare use jQuery.", [("Do not use jQuery.", "guard", -1, "project", None)]),
    (
        "I don't want you to ever touch the prod database.",
        [("Never touch the prod database.", "guard", -1, "project", None)],
    ),
    (
        "Rule: no direct DB access from the views.",
        [("No direct DB access from the views.", "guard", -1, "project", None)],
    ),
    (
        "The convention is that all timestamps are UTC.",
        [("All timestamps are UTC.", "invariant", 1, "project", None)],
    ),
    (
        "Remember to run the migrations after pulling.",
        [("Run the migrations after pulling.", "invariant", 1, "project", None)],
    ),
    (
        "Our CI runs on GitHub Actions.",
        [("The CI runs on GitHub Actions.", "invariant", 1, "project", None)],
    ),
    (
        "Everywhere, please use conventional commits.",
        [("Use conventional commits.", "preference", 1, "global", None)],
    ),
    ("no emojis please", [("No emojis.", "preference", -1, "global", "user.pref.emoji")]),
    # "make sure" before a clause stays on it ("the tests pass" is no order)
    (
        "make sure the tests pass before you push",
        [("Make sure the tests pass before you push.", "invariant", 1, "project", None)],
    ),
    (
        "Don't delete files without asking.",
        [
            (
                "Do not delete files without asking.",
                "guard",
                -1,
                "global",
                "user.pref.ask_before_destructive",
            )
        ],
    ),
    (
        "Always ask before running database migrations.",
        [("Always ask before running database migrations.", "guard", 1, "global", None)],
    ),
    (
        "The login test is flaky again. Please don't add retries to it; we never hide flakiness "
        "here. Use pytest -p no:randomly to reproduce.",
        [("Never hide flakiness in this project.", "guard", -1, "project", None)],
    ),
    (
        "Please don't run the full test suite, it takes 20 minutes.",
        [
            (
                "Do not run the full test suite, it takes 20 minutes.",
                "guard",
                -1,
                "project",
                None,
            )
        ],
    ),
]

# Messages that hold no durable rule: questions, hypotheticals, the past, observations, one-off
# task limits, quoted text and code.
EXPLICIT_NEGATIVES = [
    "I never understood this error",
    # a time of this task is no standing cue
    "we need to add pagination to the /orders endpoint before this is done",
    "you should rebase after that",
    # an interaction word inside something else: a flag, what a bug report holds
    "please add a --verbose flag to the sync command",
    "`check_version` should take a verbose arg.",
    "call it with verbose=True in the nightly job",
    "like the one in the bug report with the emoji",
    "should we always use httpx?",
    "Why do you always use npm?",
    "Maybe we should always pin versions?",
    "we used npm before",
    "We used yarn back when this was a CRA app.",
    "what if we never used an ORM at all",
    "If we were to use MongoDB we'd need a different driver.",
    "It always fails on CI.",
    "The build always breaks when I touch the lockfile.",
    "This never worked on Windows.",
    "I always forget how to run the migrations",
    "we always get timeouts from the staging API",
    "you never run the tests!",
    "never mind",
    "Never mind, I figured it out.",
    "never again lol",
    "don't worry about the failing lint for now",
    "don't do that",
    "I don't think we need that.",
    "Fix the bug but don't change the tests.",
    "Don't merge it yet.",
    "can you fix the failing test in test_api.py?",
    "Add a retry with httpx.",
    "Use requests for this script.",
    "stop the dev server",
    "thanks, looks good!",
    "Our tests are failing again.",
    "we're using a lot of memory",
    "It should never return None here, but it does.",
    'The error says "never call this directly" - what does that mean?',
    "```python\n# always use this helper\nclient = make_client()\n```\nwhy does this hang?",
    "> never use the v1 endpoint\nis that still true?",
    "Don't forget to update the changelog.",
    "I got an error with requests when fetching the page",
    "Use `npm install` here? No wait.",
    "Use pnpm.",
    "Just use requests here, it's a throwaway script.",
    "I'd prefer you use the existing helper.",
    "I want a button that exports CSV.",
    "I want you to refactor this function.",
    "Please don't add retries to it.",
    "don't use any external libraries for this",
    "Remember to update the changelog.",
    "We don't have tests for that module.",
    "you could always just restart the server",
    "we could always switch to httpx later",
    "That always happens after a rebase.",
    "never use it",
    "don't ever do that again",
    "Why did you use npm?",
    "are we always using postgres?",
    "I like how you structured that.",
    "Our API is slow today.",
    "here, try this version",
]

CORRECTION_CASES: list[
    tuple[str, str | None, str | None, list[tuple[str | None, str, int, str, str | None]]]
] = [
    # right after the user rejected `npm install`
    (
        "use pnpm",
        "Bash",
        "npm install",
        [
            (
                "Use pnpm instead of npm for package management in this project "
                "(the user rejected `npm install`).",
                "guard",
                1,
                "project",
                "project.package_manager",
            )
        ],
    ),
    (
        "no, use pnpm",
        None,
        None,
        [
            (
                "Use pnpm for package management in this project.",
                "invariant",
                1,
                "project",
                "project.package_manager",
            )
        ],
    ),
    (
        "not requests, httpx",
        None,
        None,
        [
            (
                "Use httpx instead of requests as the HTTP client in this project.",
                "guard",
                1,
                "project",
                "project.http_client",
            )
        ],
    ),
    (
        "use httpx instead of requests",
        None,
        None,
        [
            (
                "Use httpx instead of requests as the HTTP client in this project.",
                "guard",
                1,
                "project",
                "project.http_client",
            )
        ],
    ),
    (
        "it's pnpm not npm",
        None,
        None,
        [(None, "guard", 1, "project", "project.package_manager")],
    ),
    (
        "not jest, we use vitest",
        None,
        None,
        [
            (
                "Use vitest instead of jest to run tests in this project.",
                "guard",
                1,
                "project",
                "project.test_runner",
            )
        ],
    ),
    (
        "don't use sudo for that",
        "Bash",
        "sudo pip install foo",
        [
            (
                "Do not use sudo (the user rejected `sudo pip install foo`).",
                "guard",
                -1,
                "project",
                None,
            )
        ],
    ),
    (
        "wrong file, the config is in settings/base.py",
        None,
        None,
        [("The config is in settings/base.py.", "invariant", 1, "project", None)],
    ),
    (
        "No, that's the wrong directory — the migrations are in db/migrations/.",
        None,
        None,
        [("The migrations are in db/migrations/.", "invariant", 1, "project", None)],
    ),
    (
        "use git clean instead",
        "Bash",
        "rm -rf build",
        [
            (
                "Use git clean instead (the user rejected `rm -rf build`).",
                "guard",
                1,
                "project",
                None,
            )
        ],
    ),
    (
        "Wrong, use `uv run pytest`, not `python -m pytest`",
        None,
        None,
        [("Run `uv run pytest` instead of `python -m pytest`.", "guard", 1, "project", None)],
    ),
    (
        "no, we use yarn here",
        None,
        None,
        [
            (
                "Use yarn for package management in this project.",
                "invariant",
                1,
                "project",
                "project.package_manager",
            )
        ],
    ),
    (
        "no, never run the migrations against prod",
        "Bash",
        "alembic upgrade head",
        [("Never run the migrations against prod.", "guard", -1, "project", None)],
    ),
    (
        "stop. we don't use docker compose here",
        None,
        None,
        [("Do not use docker compose in this project.", "guard", -1, "project", None)],
    ),
    (
        "no no no, don't touch the migrations",
        "Edit",
        "migrations/0042_auto.py",
        [
            (
                "Do not touch the migrations (the user rejected `migrations/0042_auto.py`).",
                "guard",
                -1,
                "project",
                None,
            )
        ],
    ),
    (
        "no worries, use pnpm",
        None,
        None,
        [(None, "invariant", 1, "project", "project.package_manager")],
    ),
    (
        "Actually let's use aiohttp",
        None,
        None,
        [(None, "invariant", 1, "project", "project.http_client")],
    ),
    (
        "use uv run instead",
        "Bash",
        "python -m pytest",
        [
            (
                "Use uv run instead (the user rejected `python -m pytest`).",
                "guard",
                1,
                "project",
                None,
            )
        ],
    ),
    (
        "use git clean instead",
        "Bash",
        None,
        [("Use git clean instead (the user rejected a Bash call).", "guard", 1, "project", None)],
    ),
    (
        "no sudo please",
        "Bash",
        "sudo apt install jq",
        [("No sudo (the user rejected `sudo apt install jq`).", "guard", -1, "project", None)],
    ),
    (
        "don't use requests, we're on httpx",
        None,
        None,
        [
            (
                "Use httpx as the HTTP client in this project; never use requests.",
                "guard",
                -1,
                "project",
                "project.http_client",
            )
        ],
    ),
    (
        "nah, use fetch",
        "Edit",
        "import axios from 'axios'",
        [
            (
                "Use fetch instead of axios as the HTTP client in this project "
                "(the user rejected `import axios from 'axios'`).",
                "guard",
                1,
                "project",
                "project.http_client",
            )
        ],
    ),
]

CORRECTION_NEGATIVES: list[tuple[str, str | None, str | None]] = [
    ("no", "Bash", "npm install"),
    ("stop", "Bash", "rm -rf /"),
    ("nope", None, None),
    ("no problem", None, None),
    ("no worries, take your time", None, None),
    ("no, make it blue", None, None),
    ("nope, put it in utils.py", None, None),
    ("no, the other one", None, None),
    ("no, use the other helper instead", None, None),
    ("not like that", "Edit", "src/app.py"),
    ("actually, revert that", None, None),
    ("why would you delete that?", "Bash", "rm src/main.py"),
    ("no, I meant the other endpoint", None, None),
    ("nope, wrong approach", None, None),
    ("not now", "Bash", "make deploy"),
    ("no don't do that", "Bash", "git push --force"),
    ("no need, it's fine", None, None),
]


def _as_tuples(
    statements: list[Statement],
) -> list[tuple[str | None, str, int, str, str | None]]:
    return [(s.text, s.kind, s.polarity, s.scope, s.key) for s in statements]


def _matches(
    got: list[tuple[str | None, str, int, str, str | None]],
    want: list[tuple[str | None, str, int, str, str | None]],
) -> bool:
    if len(got) != len(want):
        return False
    return all(
        (w[0] is None or g[0] == w[0]) and g[1:] == w[1:] for g, w in zip(got, want, strict=True)
    )


@pytest.mark.parametrize(
    ("message", "want"), EXPLICIT_CASES, ids=[c[0][:40] for c in EXPLICIT_CASES]
)
def test_explicit_statements(message, want):
    got = explicit_statements(message)
    assert _matches(_as_tuples(got), want), _as_tuples(got)
    assert all(s.source == "explicit_statement" for s in got)


@pytest.mark.parametrize("message", EXPLICIT_NEGATIVES)
def test_no_statement_without_a_durable_rule(message):
    assert explicit_statements(message) == []


@pytest.mark.parametrize(
    ("message", "rejected_tool", "rejected_input", "want"),
    CORRECTION_CASES,
    ids=[c[0][:40] for c in CORRECTION_CASES],
)
def test_corrections(message, rejected_tool, rejected_input, want):
    got = corrections(message, rejected_tool=rejected_tool, rejected_input=rejected_input)
    assert _matches(_as_tuples(got), want), _as_tuples(got)
    assert all(s.source == "user_correction" for s in got)


@pytest.mark.parametrize(("message", "rejected_tool", "rejected_input"), CORRECTION_NEGATIVES)
def test_no_correction_without_an_instruction(message, rejected_tool, rejected_input):
    assert corrections(message, rejected_tool, rejected_input) == []


def test_statement_records_the_tools_it_names():
    (s,) = explicit_statements("from now on use pnpm, never npm lol")
    assert s.tools == ("pnpm", "npm")
    (c,) = corrections("use pnpm", "Bash", "npm install")
    assert c.tools == ("pnpm", "npm")


def test_corrections_also_read_explicit_rules():
    (s,) = corrections("no! from now on always use httpx")
    assert (s.kind, s.key, s.source) == ("invariant", "project.http_client", "user_correction")


def test_text_inside_code_is_not_a_rule():
    message = "Here's the log:\n```\nWARNING: never use this in production\n```\nAny idea?"
    assert explicit_statements(message) == []
    indented = "Look at this:\n    # always call close()\n    conn.close()\n"
    assert explicit_statements(indented) == []
    # a program's output pasted between triple quotes is quoted, not said
    pasted = (
        'please make our usage text like this one:\n"""\nUsage:\n  tool install --verbose NAME\n'
        '  never run tool as root\n"""'
    )
    assert explicit_statements(pasted) == []


def test_a_call_closing_a_rule_keeps_its_bracket():
    """A rule that ends in a call keeps the bracket that closes it; a smiley's goes."""
    texts = [
        s.text for s in explicit_statements("2. if there is an error, always exit with os.Exit(1)")
    ]
    assert texts == ["If there is an error, always exit with os.Exit(1)."]
    texts = [s.text for s in explicit_statements("always run make lint before pushing :)")]
    assert texts == ["Always run make lint before pushing."]


def test_one_message_yields_each_statement_once():
    message = "Never push to main. never push to main!"
    assert [s.text for s in explicit_statements(message)] == ["Never push to main."]


# --- the tool catalog -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "category"),
    [
        ("pnpm", "package_manager"),
        ("UV", "package_manager"),
        ("httpx", "http_client"),
        ("node-fetch", "http_client"),
        ("pytest", "test_runner"),
        ("go test", "test_runner"),
        ("ruff format", "formatter"),
        ("ruff", "linter"),
        ("mypy", "type_checker"),
        ("pyenv", "python_env"),
        ("PostgreSQL", "database"),
        ("redis", "cache"),
        ("Django ORM", "orm"),
        ("Next.js", "web_framework"),
        ("left-pad", None),
    ],
)
def test_tool_category(name, category):
    assert tool_category(name) == category


def test_every_catalog_category_has_a_phrase():
    from reos_memory.squirrel.text.tool_names import CATEGORY_PHRASE

    assert set(TOOL_CATEGORIES.values()) == set(CATEGORY_PHRASE)


@pytest.mark.parametrize(
    ("text", "tools"),
    [
        ("switch from Requests to HTTPX", ["requests", "httpx"]),
        ("run `ruff format` then ruff check", ["ruff format", "ruff"]),
        ("we deploy Next.js on Postgres with Prisma", ["nextjs", "postgres", "prisma"]),
        ("import requests\nrequests.get(url)", ["requests"]),
        ("const res = await fetch(url)", ["fetch"]),
        ("npm i node-fetch", ["npm", "node-fetch"]),
        ("pnpm-lock.yaml and src/requests/ are unrelated", []),
        # English words that are also tool names
        ("I got an error after the HTTP requests timed out", []),
        ("don't fetch the whole history", []),
        ("make the output prettier and the background black", []),
        ("format with black", ["black"]),
        ("let's go test it on staging", []),
        ("run go test ./... before pushing", ["go test"]),
        ("not requests, httpx", ["requests", "httpx"]),
    ],
)
def test_mentioned_tools(text, tools):
    assert mentioned_tools(text) == tools


@pytest.mark.parametrize(
    ("text", "switch"),
    [
        ("switch from requests to httpx", ("http_client", "requests", "httpx")),
        ("replace npm with pnpm", ("package_manager", "npm", "pnpm")),
        ("use httpx instead of requests", ("http_client", "requests", "httpx")),
        ("migrated the tests from jest to vitest", ("test_runner", "jest", "vitest")),
        ("migrated flake8 to ruff", ("linter", "flake8", "ruff")),
        ("httpx, not requests", ("http_client", "requests", "httpx")),
        ("black -> ruff format", ("formatter", "black", "ruff format")),
        ("we use httpx and requests", None),
        ("switch from requests to Django", None),
        ("update the README", None),
    ],
)
def test_switch_in(text, switch):
    assert switch_in(text) == switch


def test_switch_between_failing_and_working_text():
    before = "import requests\nresp = requests.get(url, timeout=5)"
    after = "import httpx\nresp = httpx.get(url, timeout=5)"
    assert switch_between(before, after) == ("http_client", "requests", "httpx")
    assert switch_between("npm install", "pnpm install") == ("package_manager", "npm", "pnpm")
    assert switch_between("pytest -x", "pytest -x -q") is None
    assert switch_between("npm install", "pytest") is None
    assert switch_between("", "replace requests with httpx") == (
        "http_client",
        "requests",
        "httpx",
    )


TEXT_PACKAGE = Path(__file__).resolve().parents[1] / "reos_memory" / "squirrel" / "text"
# the standard library's text tools; other modules of the package are checked in their turn
PURE_IMPORTS = {
    "__future__",
    "re",
    "dataclasses",
    "itertools",
    "functools",
    "collections.abc",
    "typing",
    "math",  # the lesson model's logistic function
}
IMPURE_CALLS = {"open", "print", "input", "exec", "eval", "__import__"}


@pytest.mark.parametrize("path", sorted(TEXT_PACKAGE.glob("*.py")), ids=lambda path: path.name)
def test_rule_files_are_pure(path: Path):
    """Every rule file (statements and the modules it is built from, the signals, prose ...)
    imports only the standard library's text tools and its sibling rule files, and does no I/O."""
    tree = ast.parse(path.read_bytes())
    imported = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    siblings = {f"reos_memory.squirrel.text.{p.stem}" for p in TEXT_PACKAGE.glob("*.py")}
    assert imported <= PURE_IMPORTS | siblings
    called = {
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    assert not called & IMPURE_CALLS


def test_the_purity_check_sees_every_rule_file():
    names = {p.stem for p in TEXT_PACKAGE.glob("*.py")}
    assert {"statements", "clause_rules", "tool_names", "runner_output", "replies"} <= names
