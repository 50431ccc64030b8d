"""Names of developer tools in a message: package managers, HTTP clients, test runners,
formatters, linters, type checkers, databases, ORMs, web frameworks; which of them a clause says
to use and which to avoid. Names that are also English words ("requests", "black", "got") count
only in a tool-like context."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from reos_memory.squirrel.text.prose import fold, wordset

# Tool name -> category. A category names the slot `project.<category>`, so a later statement about
# the same category replaces the earlier one; a tool belongs to exactly one category.
TOOL_CATEGORIES: dict[str, str] = {
    # package managers
    "npm": "package_manager",
    "pnpm": "package_manager",
    "yarn": "package_manager",
    "bun": "package_manager",
    "pip": "package_manager",
    "uv": "package_manager",
    "poetry": "package_manager",
    "pipenv": "package_manager",
    "pdm": "package_manager",
    "conda": "package_manager",
    "cargo": "package_manager",
    "bundler": "package_manager",
    "composer": "package_manager",
    # HTTP clients
    "requests": "http_client",
    "httpx": "http_client",
    "aiohttp": "http_client",
    "urllib3": "http_client",
    "urllib": "http_client",
    "axios": "http_client",
    "fetch": "http_client",
    "node-fetch": "http_client",
    "got": "http_client",
    "superagent": "http_client",
    # test runners
    "pytest": "test_runner",
    "unittest": "test_runner",
    "nose2": "test_runner",
    "jest": "test_runner",
    "vitest": "test_runner",
    "mocha": "test_runner",
    "go test": "test_runner",
    "cargo test": "test_runner",
    "rspec": "test_runner",
    "minitest": "test_runner",
    # formatters
    "black": "formatter",
    "ruff format": "formatter",
    "prettier": "formatter",
    "gofmt": "formatter",
    "rustfmt": "formatter",
    "autopep8": "formatter",
    "yapf": "formatter",
    # linters
    "ruff": "linter",
    "flake8": "linter",
    "pylint": "linter",
    "eslint": "linter",
    "biome": "linter",
    "golangci-lint": "linter",
    "clippy": "linter",
    "rubocop": "linter",
    # type checkers
    "mypy": "type_checker",
    "pyright": "type_checker",
    # Python environments
    "venv": "python_env",
    "virtualenv": "python_env",
    "pyenv": "python_env",
    # databases
    "postgres": "database",
    "mysql": "database",
    "mariadb": "database",
    "sqlite": "database",
    "mongodb": "database",
    "duckdb": "database",
    # caches: kept apart from databases, or "we use redis" would replace the Postgres memory
    "redis": "cache",
    "memcached": "cache",
    # ORMs
    "sqlalchemy": "orm",
    "sqlmodel": "orm",
    "django orm": "orm",
    "peewee": "orm",
    "prisma": "orm",
    "drizzle": "orm",
    "typeorm": "orm",
    "sequelize": "orm",
    # web frameworks
    "django": "web_framework",
    "flask": "web_framework",
    "fastapi": "web_framework",
    "express": "web_framework",
    "nextjs": "web_framework",
    "nestjs": "web_framework",
    "rails": "web_framework",
    "phoenix": "web_framework",
    "laravel": "web_framework",
}

_ALIASES: dict[str, str] = {
    "postgresql": "postgres",
    "mongo": "mongodb",
    "sqlite3": "sqlite",
    "next.js": "nextjs",
    "nest.js": "nestjs",
    "express.js": "express",
    "expressjs": "express",
    "ruby on rails": "rails",
    "py.test": "pytest",
    "pip3": "pip",
    "django-orm": "django orm",
    "ruff formatter": "ruff format",
}


# Names that are also plain English words: they count only in a tool-like context.
_AMBIGUOUS = wordset(
    "requests fetch got express black rails prettier jest mocha phoenix drizzle composer bundler"
) | {"go test"}
_STRONG_ONLY = frozenset({"got"})  # "I got an error": a cue verb is not enough

CATEGORY_PHRASE = {
    "package_manager": "for package management",
    "http_client": "as the HTTP client",
    "test_runner": "to run tests",
    "formatter": "to format code",
    "linter": "for linting",
    "type_checker": "for type checking",
    "python_env": "for Python environments",
    "database": "as the database",
    "cache": "as the cache",
    "orm": "as the ORM",
    "web_framework": "as the web framework",
}


@dataclass(frozen=True)
class Mention:
    tool: str
    start: int
    end: int


_CANON: dict[str, str] = {name: name for name in TOOL_CATEGORIES} | _ALIASES
# Candidate words are found with one cheap pattern and looked up in _CANON: much faster than one
# alternation of every name. A candidate may carry a suffix ("requests.get", "pnpm."), which is cut
# at its dots; names of two words are completed by looking at the text after the first word.
_CANDIDATE_RE = re.compile(r"(?<![\w./@-])[A-Za-z][\w.-]*")
_PREFILTER_RE = re.compile(r"[a-z][a-z0-9_-]*")
_FIRST_WORDS = frozenset(re.split(r"[\s.]", name)[0] for name in _CANON)
_MULTIWORD: dict[str, tuple[tuple[re.Pattern[str], str], ...]] = {
    "ruff": ((re.compile(r"\s+format(?:ter)?(?![\w-])", re.IGNORECASE), "ruff format"),),
    "go": ((re.compile(r"\s+test(?![\w-])", re.IGNORECASE), "go test"),),
    "cargo": ((re.compile(r"\s+test(?![\w-])", re.IGNORECASE), "cargo test"),),
    "django": ((re.compile(r"(?:\s+|-)orm(?![\w-])", re.IGNORECASE), "django orm"),),
    "ruby": ((re.compile(r"\s+on\s+rails(?![\w-])", re.IGNORECASE), "rails"),),
}


# The same texts come back: a command retried, an edit's text read for a switch and for the
# statements in it, an episode's messages read by the pre-filter and then by the writer.
@functools.lru_cache(maxsize=512)
def _scan_tools(text: str) -> tuple[Mention, ...]:
    """Every catalog name in `text` at word boundaries, ambiguous or not."""
    low = fold(text)
    if _FIRST_WORDS.isdisjoint(_PREFILTER_RE.findall(low)):
        return ()  # the common case, decided at C speed
    out = []
    for m in _CANDIDATE_RE.finditer(low):
        word = m.group()
        head = word.partition(".")[0]
        if head not in _FIRST_WORDS:
            continue
        start = m.start()
        if head in _MULTIWORD:
            found = None
            for rx, name in _MULTIWORD[head]:
                if more := rx.match(low, start + len(head)):
                    found = Mention(name, start, more.end())
                    break
            if found is not None:
                out.append(found)
                continue
        while word:
            tool = _CANON.get(word)
            if tool is not None:
                out.append(Mention(tool, start, start + len(word)))
                break
            cut = word.rfind(".")
            if cut <= 0:
                break
            word = word[:cut]
    return tuple(out)


def strip_tools(text: str, mentions: list[Mention], offset: int = 0) -> str:
    """`text` (starting at `offset` of the clause) with the mentioned names blanked out."""
    out = []
    pos = 0
    for m in mentions:
        a, b = m.start - offset, m.end - offset
        if a < pos or b > len(text):
            continue
        out.append(text[pos:a])
        pos = b
    out.append(text[pos:])
    return " ".join(out)


_BEFORE_CUE_RE = re.compile(
    r"(?:\b(?:use|uses|using|used|with|via|prefer|prefers|preferring|instead\s+of|rather\s+than"
    r"|over|than|switch(?:ed|ing)?\s+(?:to|from)|mov(?:e|ed|ing)\s+(?:to|from)"
    r"|migrat(?:e|ed|ing)\s+(?:to|from)|replac(?:e|ed|es|ing)|install(?:s|ed|ing)?|run(?:s|ning)?"
    r"|add(?:ed|ing)?|drop(?:ped)?|ditch(?:ed)?|remov(?:e|ed|ing)|go\s+with|stick\s+with)\s+)$"
)
_STRONG_BEFORE_RE = re.compile(
    r"(?:\bimport\s+|\bfrom\s+['\"]?|\brequire\(\s*['\"]|\bpip\s+install\s+"
    r"|\bnpm\s+(?:i|install)\s+)$"
)
_STRONG_AFTER_RE = re.compile(
    r"^(?:\.[a-z_]|\(|\s+import\b|['\"]\)|\s+\./"
    r"|[\s`'\"]*(?:library|lib|package|module|client|framework|formatter|formatting|linter"
    r"|runner|tests?|specs?|app|server|orm|config|configuration|plugin|version|dependency"
    r"|calls?|cli)\b)",
    re.IGNORECASE,
)

LANG_VERSION_RE = re.compile(
    r"\b(python|py|node(?:\.?js)?|ruby|java|php|go(?:lang)?)\s*v?(\d+(?:\.\d+){0,2})\b",
    re.IGNORECASE,
)


def tool_category(name: str) -> str | None:
    """The category of a catalog tool (aliases such as `postgresql` included), else None."""
    canon = _CANON.get(" ".join(name.lower().split()))
    return TOOL_CATEGORIES[canon] if canon else None


def tool_mentions(text: str, vouched: frozenset[str] = frozenset()) -> list[Mention]:
    """Catalog tools named in `text`, ambiguous English words kept only in a tool context.

    `vouched` holds categories with a confirmed tool elsewhere in the same message.
    """
    raw: list[tuple[Mention, bool]] = []
    low = ""
    for mention in _scan_tools(text):
        tool = mention.tool
        if tool not in _AMBIGUOUS:
            raw.append((mention, True))
            continue
        if not low:
            low = fold(text)
        before = low[max(0, mention.start - 40) : mention.start]
        after = low[mention.end : mention.end + 30]
        strong = (
            before.endswith("`")
            or _STRONG_BEFORE_RE.search(before) is not None
            or _STRONG_AFTER_RE.match(after) is not None
        )
        weak = tool not in _STRONG_ONLY and _BEFORE_CUE_RE.search(before) is not None
        raw.append((mention, strong or weak))
    confirmed = {(TOOL_CATEGORIES[m.tool], m.tool) for m, ok in raw if ok}
    out = []
    for mention, ok in raw:
        cat = TOOL_CATEGORIES[mention.tool]
        # "not requests, httpx": a confirmed rival in the same category vouches for the word
        rival = cat in vouched or any(c == cat and t != mention.tool for c, t in confirmed)
        if ok or (rival and mention.tool not in _STRONG_ONLY):
            out.append(mention)
    return out


def mentioned_tools(text: str) -> list[str]:
    """Catalog tools named in `text` (canonical names, case-insensitive), first mention first."""
    seen: dict[str, None] = {}
    for mention in tool_mentions(text):
        seen.setdefault(mention.tool, None)
    return list(seen)


def classify_tools(
    low: str, mentions: list[Mention], j: int, prohibition: bool
) -> tuple[list[str], list[str], bool]:
    """Split the tools named from position `j` on into (use, avoid, avoided by never/don't)."""
    pos: list[str] = []
    neg: list[str] = []
    strong = False
    prev_end = j
    prev: tuple[bool, bool] | None = None
    for m in mentions:
        if m.start < j:
            continue
        seg = low[prev_end : m.start]
        cut = max(seg.rfind(","), seg.rfind(";"), seg.rfind(":"), seg.rfind(" but "))
        if cut >= 0:
            seg = seg[cut + 1 :]
        if prev is not None and cut < 0 and seg.strip(" `'\"/") in {"", "or", "and", "nor"}:
            is_neg, is_strong = prev  # "never npm or yarn"
        elif _STRONG_NEG_RE.search(seg):
            is_neg, is_strong = True, True
        elif _NEG_CUE_RE.search(seg):
            is_neg, is_strong = True, False
        elif prev is None and prohibition and cut < 0:
            is_neg, is_strong = True, True  # the object of "never ..." itself
        else:
            is_neg, is_strong = False, False
        target = neg if is_neg else pos
        if m.tool not in target:
            target.append(m.tool)
        strong = strong or is_strong
        prev = (is_neg, is_strong)
        prev_end = m.end
    return [t for t in pos if t not in neg], neg, strong


_STRONG_NEG_RE = re.compile(r"\b(?:never|don'?t|dont|do\s+not|avoid|stop|no\s+more)\b")
_NEG_CUE_RE = re.compile(
    r"\b(?:not|no|instead\s+of|rather\s+than|over|than|ditch|drop|replac\w*|from|without)\b"
)
