"""Explicit rules and corrections in a developer's messages, found by regexes instead of an LLM.

Squirrel's offline writer turns what a user says outright ("from now on use pnpm, never npm",
"no, use httpx", "don't apologize") into candidate memories. Precision beats recall here: a junk
memory is injected into every later task, a missed one costs one more repetition. So a clause
becomes a statement only when it carries a durable cue (always, never, from now on, we use ...,
our X is ..., note that ..., a prohibition that opens its sentence) or, in a correction, names a
concrete tool, command or location. Questions, hypotheticals, remarks about the past, one-off task
limits ("for now", "in this PR"), quoted text and code are ignored.

Everything here is pure and cheap: precompiled regexes, no I/O, no model.
"""

from __future__ import annotations

import functools
import itertools
import re
from dataclasses import dataclass, field, replace

EXPLICIT = "explicit_statement"  # Statement.source values, as in the seed's evidence table
CORRECTION = "user_correction"

# --------------------------------------------------------------------------------------------
# Tool catalog
# --------------------------------------------------------------------------------------------

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


def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


# Names that are also plain English words: they count only in a tool-like context.
_AMBIGUOUS = _wordset(
    "requests fetch got express black rails prettier jest mocha phoenix drizzle composer bundler"
) | {"go test"}
_STRONG_ONLY = frozenset({"got"})  # "I got an error": a cue verb is not enough

_CATEGORY_PHRASE = {
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
class _Mention:
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


def _fold(text: str) -> str:
    """`text` in lowercase, always of the same length (positions carry over to the original)."""
    low = text.lower()
    if len(low) == len(text):
        return low
    return "".join(c if len(c) == 1 else "?" for c in (ch.lower() for ch in text))


# The same texts come back: a command retried, an edit's text read for a switch and for the
# statements in it, an episode's messages read by the pre-filter and then by the writer.
@functools.lru_cache(maxsize=512)
def _scan_tools(text: str) -> tuple[_Mention, ...]:
    """Every catalog name in `text` at word boundaries, ambiguous or not."""
    low = _fold(text)
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
                    found = _Mention(name, start, more.end())
                    break
            if found is not None:
                out.append(found)
                continue
        while word:
            tool = _CANON.get(word)
            if tool is not None:
                out.append(_Mention(tool, start, start + len(word)))
                break
            cut = word.rfind(".")
            if cut <= 0:
                break
            word = word[:cut]
    return tuple(out)


def _strip_tools(text: str, mentions: list[_Mention], offset: int = 0) -> str:
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

_LANG_VERSION_RE = re.compile(
    r"\b(python|py|node(?:\.?js)?|ruby|java|php|go(?:lang)?)\s*v?(\d+(?:\.\d+){0,2})\b",
    re.IGNORECASE,
)


def tool_category(name: str) -> str | None:
    """The category of a catalog tool (aliases such as `postgresql` included), else None."""
    canon = _CANON.get(" ".join(name.lower().split()))
    return TOOL_CATEGORIES[canon] if canon else None


def _mentions(text: str, vouched: frozenset[str] = frozenset()) -> list[_Mention]:
    """Catalog tools named in `text`, ambiguous English words kept only in a tool context.

    `vouched` holds categories with a confirmed tool elsewhere in the same message.
    """
    raw: list[tuple[_Mention, bool]] = []
    low = ""
    for mention in _scan_tools(text):
        tool = mention.tool
        if tool not in _AMBIGUOUS:
            raw.append((mention, True))
            continue
        if not low:
            low = _fold(text)
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
    for mention in _mentions(text):
        seen.setdefault(mention.tool, None)
    return list(seen)


# --------------------------------------------------------------------------------------------
# Tool switches
# --------------------------------------------------------------------------------------------

# (text before the first tool, text between the tools, which of the two is the new one)
_SWITCH_RULES: tuple[tuple[re.Pattern[str] | None, re.Pattern[str], int], ...] = (
    (
        re.compile(
            r"\b(?:from|migrat\w*|switch\w*|mov(?:e|ed|es|ing)|chang\w*|convert\w*|port\w*)"
            r"\s+(?:(?:the|our|all|of|from)\s+)*$"
        ),
        re.compile(r"^\s*(?:[\w.]+\s+){0,2}?(?:to|over\s+to|->|→|=>)\s*(?:the\s+)?$"),
        1,
    ),
    (
        re.compile(r"\b(?:replac\w*|swap\w*(?:\s+out)?|drop\w*|ditch\w*|trad\w*)\s+(?:the\s+)?$"),
        re.compile(r"^\s*(?:out\s+)?(?:with|by|for|in\s+favou?r\s+of)\s*(?:the\s+)?$"),
        1,
    ),
    (None, re.compile(r"^\s*(?:->|→|=>)\s*$"), 1),
    (
        None,
        re.compile(r"^\s*(?:is|was|has\s+been|gets|got)?\s*replaced\s+(?:with|by)\s*$"),
        1,
    ),
    (
        None,
        re.compile(r"^\s*(?:,\s*)?(?:instead\s+of|rather\s+than|in\s+place\s+of|over|not)\s*$"),
        0,
    ),
    (None, re.compile(r"^\s*replaces\s*$"), 0),
    (re.compile(r"\bnot\s+$"), re.compile(r"^\s*[,;:]?\s*(?:but|use|rather|just)?\s*$"), 1),
)


def switch_in(text: str) -> tuple[str, str, str] | None:
    """(category, old, new) when one text describes a switch between two tools of a category.

    Recognises "switch/migrate/move from X to Y", "migrated X to Y", "replace X with Y",
    "Y instead of / rather than / over X", "Y, not X", "not X, Y", "X -> Y".
    """
    mentions = _mentions(text)
    if len(mentions) < 2:
        return None
    low = _fold(text)
    for a, b in itertools.pairwise(mentions):
        cat = TOOL_CATEGORIES[a.tool]
        if a.tool == b.tool or TOOL_CATEGORIES[b.tool] != cat:
            continue
        before = low[max(0, a.start - 40) : a.start]
        between = low[a.end : b.start]
        for before_re, between_re, new_index in _SWITCH_RULES:
            if between_re.match(between) and (before_re is None or before_re.search(before)):
                old, new = (a.tool, b.tool) if new_index == 1 else (b.tool, a.tool)
                return cat, old, new
    return None


def switch_between(before: str, after: str) -> tuple[str, str, str] | None:
    """(category, old, new) when `after` uses a tool of the same category that `before` used.

    `before`/`after` are e.g. the failing and the working command, or an edit's old and new
    text. When they show no such difference, `after` is read on its own as a description
    ("replace requests with httpx").
    """
    old_tools = mentioned_tools(before)
    new_tools = mentioned_tools(after)
    removed = [t for t in old_tools if t not in new_tools]
    for new in new_tools:
        if new in old_tools:
            continue
        cat = TOOL_CATEGORIES[new]
        for old in removed:
            if TOOL_CATEGORIES[old] == cat:
                return cat, old, new
    return switch_in(after)


# --------------------------------------------------------------------------------------------
# Statements
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Statement:
    """One memory candidate derived from a user's words."""

    text: str
    kind: str  # preference | invariant | pattern | guard | note
    polarity: int  # -1 for a prohibition ("never X"), +1 otherwise
    scope: str  # global | project
    key: str | None  # slot such as "project.package_manager" or "user.pref.concise"
    source: str  # explicit_statement | user_correction
    tools: tuple[str, ...]


# --- splitting a message into clauses --------------------------------------------------------

_FENCE_RE = re.compile(r"(```|~~~).*?(?:\1|\Z)", re.S)
_MULTILINE_CODE_RE = re.compile(r"`[^`]*\n[^`]*`")
_INLINE_CODE_RE = re.compile(r"`[^`\n]+`")
_QUOTED_RE = re.compile(r"\"[^\"\n]{1,300}\"|“[^”\n]{1,300}”")
_SKIP_LINE_RE = re.compile(
    r"^\s*(?:>|\$\s|>>>|\.\.\.\s|#|Traceback\b|File\s\"|at\s\S+\(|E\s{2}"
    r"|[A-Z][A-Z_]{2,}\b\s*[:\]]|\[[A-Za-z]+\]|\d{4}-\d\d-\d\d|\d\d:\d\d:\d\d)"
)
_INDENTED_RE = re.compile(r"^(?:\t| {4,})(?![-*+•]\s|\d+[.)]\s)")
_BULLET_RE = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
_HEADER_RE = re.compile(
    r"\b(?:from now on|going forward|moving forward|rules?|conventions?|guidelines?|remember"
    r"|always|never|preferences?|important|please note|in (?:all|every))\b"
)
_SENTENCE_END_RE = re.compile(r"[.!?…]+(?=\s|$)")
_ABBREVIATIONS = frozenset({"e.g", "i.e", "eg", "ie", "etc", "vs", "cf", "approx", "incl", "ca"})
_CONDITION_START_RE = re.compile(
    r"\s*(?:if|when|whenever|every\s+time|each\s+time|any\s*time|after|before|once|unless)\b[^,;]*$"
)
_CLAUSE_SPLIT_RE = re.compile(
    r"\s*;\s*|,?\s+but\s+(?!not\b)"
    r"|,\s*(?:and\s+|but\s+|or\s+)?(?=(?:never|don'?t|dont|do\s+not|always|avoid|stop|please)\b)"
    r"|\s+and\s+(?=(?:never|don'?t|dont|do\s+not|always|avoid)\b)"
)


@dataclass
class _Clause:
    raw: str
    masked: str  # lowercase; code spans and quotations blanked, same length as raw
    first: bool  # opens its sentence
    durable: bool  # inherited from a "from now on"/"rules:" context
    glob: bool  # inherited "in all my projects"
    vouched: frozenset[str] = frozenset()  # tool categories confirmed elsewhere in the message
    conditioned: bool = False  # the rule part of "if X, ...": its pronouns point at X
    rejected: frozenset[str] = frozenset()  # words of the tool call the user just rejected


def _mask(line: str) -> str:
    def blank(m: re.Match[str]) -> str:
        s = m.group()
        return s[0] + "_" * (len(s) - 2) + s[-1]

    return _fold(_QUOTED_RE.sub(blank, _INLINE_CODE_RE.sub(blank, line)))


def _sentences(raw: str, masked: str) -> list[tuple[str, str]]:
    out = []
    start = 0
    for m in _SENTENCE_END_RE.finditer(masked):
        if m.group() == "." and m.start() > start:
            word = masked[start : m.start()].rsplit(None, 1)[-1].lstrip("(")
            if word in _ABBREVIATIONS:
                continue
        out.append((raw[start : m.end()], masked[start : m.end()]))
        start = m.end()
    if masked[start:].strip():
        out.append((raw[start:], masked[start:]))
    return out


def _clauses(text: str, rejected: frozenset[str] = frozenset()) -> list[_Clause]:
    if "```" in text or "~~~" in text:
        text = _FENCE_RE.sub("\n", text)
    if "`" in text:
        text = _MULTILINE_CODE_RE.sub("\n", text)
    vouched = frozenset(TOOL_CATEGORIES[m.tool] for m in _mentions(text))
    out: list[_Clause] = []
    header_durable = header_glob = False
    for line in text.splitlines():
        if not line.strip():
            continue
        if _INDENTED_RE.match(line) or _SKIP_LINE_RE.match(line):
            continue
        bullet = _BULLET_RE.match(line)
        if bullet:
            line = line[bullet.end() :]
        else:
            header_durable = header_glob = False
        masked = _mask(line)
        stripped = masked.rstrip()
        if stripped.endswith(":") and _HEADER_RE.search(stripped):
            header_durable = True
            header_glob = _GLOBAL_RE.search(stripped) is not None
            continue
        for raw_s, masked_s in _sentences(line, masked):
            durable, glob = header_durable, header_glob
            pos = 0
            pieces: list[tuple[int, int]] = []
            for m in _CLAUSE_SPLIT_RE.finditer(masked_s):
                if not pieces and _CONDITION_START_RE.match(masked_s, pos, m.start()):
                    continue  # "if the tests fail, never ...": the condition stays with its rule
                pieces.append((pos, m.start()))
                pos = m.end()
            pieces.append((pos, len(masked_s)))
            for n, (a, b) in enumerate(pieces):
                piece = masked_s[a:b]
                if not piece.strip():
                    continue
                out.append(
                    _Clause(raw_s[a:b], piece, n == 0, durable, glob, vouched, rejected=rejected)
                )
                # "Everywhere, please ..." / "From now on; ...": a bare prefix covers the rest
                bare = piece[_skip_lead(piece, 0) :].strip(" ,;:.!-")
                if _DURABLE_PREFIX_RE.fullmatch(bare) or _GLOBAL_PREFIX_RE.fullmatch(bare):
                    durable = True
                    glob = glob or _GLOBAL_RE.search(bare) is not None
    return out


# --- cues -------------------------------------------------------------------------------------

_TRAIL_CHARS = frozenset(" \t,.!?…;:~)*_-\ufe0f")
_TRAIL_WORD_RE = re.compile(
    r"(?<![\w'])(?:lol|lmao|haha+|thanks|thank\s+you|thx|ty|pls|plz|please|ok|okay|btw|tho|k"
    r"|for\s+(?:that|this)|like\s+(?:that|this)|again|anymore|any\s+more|ever\s+again)\Z"
    r"|[:;]-?[)(dp]\Z"
)
_LEAD_RE = re.compile(
    r"(?:(?:ok(?:ay)?|so|also|and|but|btw|by\s+the\s+way|oh|hey|yeah|yep|yes|alright|well"
    r"|hmm+|one\s+more\s+thing|important|reminder|nb|fwiw|and\s+also|oh\s+and)\b[\s,:;!.-]*"
    r"|[\s,:;!.*\u2014\u2013-]+)*"
)
_CORRECTION_LEAD_RE = re.compile(
    r"(?:(?:actually|instead|rather)\s+(?=\w)"
    r"|(?:no+[\s,.!]+)*(?:no+|nope|nah)(?:\s*[,.!:;\u2014\u2013-]+\s*"
    r"|\s+(?=(?:use|run|try|it'?s|its|we|you|the|not"
    r"|don'?t|do|never|always|please|pls|that|this|i)\b))"
    r"|(?:wrong|that'?s\s+(?:wrong|not\s+(?:right|it|what\s+i\s+(?:want|meant|asked)(?:\s+for)?))"
    r"|(?:that'?s|this\s+is|you'?re\s+in)\s+the\s+wrong\s+\w+"
    r"|not\s+quite|incorrect|actually|hold\s+on|wait|stop|instead)"
    r"(?:\s+(?:file|place|path|dir(?:ectory)?|one|tool|command|package|module|folder|approach"
    r"|way|again))?\s*[,.!:;\u2014\u2013-]+\s*)+"
)
_POLITE_ONLY_RE = re.compile(
    r"(?:no\s+(?:problem|worries|thanks|thank\s+you|need|rush|biggie)|never\s*mind|nevermind"
    r"|all\s+good|(?:it'?s|that'?s)\s+(?:fine|ok|okay|alright)|np|thanks|thank\s+you|ok(?:ay)?)"
    r"\b[\s,.!;:\u2014\u2013-]*"
)
_POLITE_RE = re.compile(
    r"(?:(?:can|could|would)\s+you(?:\s+(?:please|pls|kindly))?|please|pls|plz|kindly)\s*,?\s+"
)
_POLITE_RULE_RE = re.compile(
    r"(?:can|could|would)\s+you(?:\s+please)?\s+(?:always|never|stop|not|from\s+now\s+on"
    r"|going\s+forward|make\s+sure|remember)\b"
)
_DURABLE_PREFIX_RE = re.compile(
    r"(?:from\s+now\s+on|from\s+here\s+on(?:\s+out)?|going\s+forward|moving\s+forward"
    r"|in\s+(?:the\s+)?future|henceforth|for\s+future\s+reference|from\s+this\s+point(?:\s+on)?"
    r"|as\s+a\s+(?:general\s+)?rule|in\s+general|generally)\b[\s,:-]*"
)
_GLOBAL_RE = re.compile(
    r"\b(?:in|for|across|on)\s+(?:all|every|each|any)\s+(?:of\s+)?(?:my|our|the|your)?\s*"
    r"(?:other\s+)?(?:projects?|repos?|repositories|codebases?)\b|\beverywhere\b"
    r"|\bregardless\s+of\s+(?:the\s+)?(?:project|repo)\b"
    r"|\bno\s+matter\s+(?:the|which|what)\s+(?:project|repo)\b"
)
_GLOBAL_HINT_RE = re.compile(r"\b(?:all|every|each|any|everywhere|regardless|matter)\b")
_PROJECT_HINT_RE = re.compile(r"\b(?:this|here)\b")
_GLOBAL_PREFIX_RE = re.compile(r"(?:" + _GLOBAL_RE.pattern + r")[\s,:-]*")
_GLOBAL_STRIP_RE = re.compile(r",?\s*(?:" + _GLOBAL_RE.pattern + r")\s*,?", re.IGNORECASE)
_PROJECT_RE = re.compile(
    r"\b(?:in|for|within)\s+this\s+(?:repo(?:sitory)?|project|codebase|code\s*base|monorepo"
    r"|service|app|package|team)\b|\bhere\b(?!')"
)
_PROJECT_PREFIX_RE = re.compile(
    r"(?:(?:in|for|within)\s+this\s+(?:repo(?:sitory)?|project|codebase|code\s*base|monorepo"
    r"|service|app|package|team)|here)\b[\s,:-]*(?=\w)"
)
_MAKE_SURE_RE = re.compile(r"(?:make\s+sure|be\s+sure|ensure)(?:\s+that)?(?:\s+(?:to|you|we))?\s+")
_DECIDED_RE = re.compile(
    r"we(?:'ve|\s+have)?\s+(?:(?:decided|agreed)\s+(?:to|that|on)|settled\s+on)\s+"
)
_MODAL_RE = re.compile(
    r"(?:you|we)\s+(?:(?:should|must|need\s+to|have\s+to|ought\s+to|shall)(?P<always>\s+always)?"
    r"|always\s+(?:need\s+to|have\s+to|must|should))\s+(?!not\b|never\b)"
)
_MODAL_NEG_RE = re.compile(
    r"(?:you|we)\s+(?:(?P<strong>must|shall)\s+not|mustn'?t|(?:should|need\s+to|ought\s+to)\s+not"
    r"|shouldn'?t|(?P<never>(?:should|must|shall)\s+never))(?P<ever>\s+ever)?\s+"
)
_REMEMBER_TO_RE = re.compile(r"(?:remember|don'?t\s+forget|do\s+not\s+forget)\s+to\s+")
_FACT_PREFIX_RE = re.compile(
    r"(?:remember|keep\s+in\s+mind|note|be\s+aware|fyi|heads\s+up|for\s+context"
    r"|for\s+(?:your|the)\s+(?:info|information|reference))"
    r"(?:\s*[,:-]\s*(?:that\s+)?|\s+that\s+)|fyi\s+"
)
_CONVENTION_RE = re.compile(
    r"(?:(?:the|our)\s+(?:convention|rule|standard|policy|norm|practice|house\s+style)"
    r"(?:\s+(?:here|in\s+this\s+(?:repo|project|codebase)))?\s*(?:is|:)"
    r"|(?P<colon>(?:convention|rule|policy)\s*:))\s*(?:(?P<conn>that|to)\s+)?"
)
_I_ALWAYS_RE = re.compile(
    r"i\s+always\s+(?:(?P<you>(?:want|need|expect)\s+you\s+to)\s+|(?P<want>want|like|need)\s+"
    r"|(?=use|prefer|run))"
)
_I_WANT_RE = re.compile(
    r"i\s+(?:(?P<neg>never|don'?t|do\s+not)\s+)?(?:really\s+)?(?:want|need|expect)\s+"
    r"(?P<you>you\s+to\s+)?"
)
_YOU_DIDNT_RE = re.compile(r"(?:didn'?t|did\s+not|wouldn'?t|would\s+not|don'?t|do\s+not|not)\s+")
_I_PREFER_RE = re.compile(
    r"i(?:'d|\s+would)?\s+(?:always\s+|really\s+|generally\s+|strongly\s+)?prefer\s+"
    r"(?:(?:that|if|when|it\s+when)\s+)?(?P<you>you\s+(?:to\s+)?)?"
)

_NO_MORE_RE = re.compile(r"no\s+more\s+")
_NO_RE = re.compile(r"no\s+")
_NO_STOP = _wordset("one way need problem worries thanks idea clue luck rush biggie i you it")
_NEVER_RE = re.compile(r"(?:never(?:\s+ever)?|(?:don'?t|dont|do\s+not)\s+ever)\s+")
_DONT_RE = re.compile(r"(?:don'?t|dont|do\s+not)\s+(?:you\s+(?:dare\s+|ever\s+)?(?=\w))?")
_ALWAYS_RE = re.compile(r"always\s+")
_STOP_RE = re.compile(r"(?:stop|quit)\s+(?=\w+ing\b)")
_AVOID_RE = re.compile(r"avoid\s+")
_PREFER_RE = re.compile(r"prefer\s+")
_WE_ALWAYS_RE = re.compile(r"we\s+(?P<adv>always|never)\s+")
_WE_DONT_RE = re.compile(r"we\s+(?:don'?t|dont|do\s+not)\s+")
_WE_USE_RE = re.compile(
    r"(?:we(?:'re|\s+are)?\s+(?:only\s+|mostly\s+|mainly\s+|now\s+)?(?:use|using)"
    r"|we\s+standardi[sz]ed?\s+on|we\s+(?:stick|stuck)\s+(?:to|with)|we\s+go\s+with)\s+"
)
_PROJECT_USES_RE = re.compile(
    r"(?:this|the)\s+(?:project|repo(?:sitory)?|codebase|app|service)\s+"
    r"(?:uses|is\s+using|runs\s+on|targets|is\s+built\s+(?:on|with)|requires)\s+"
)
_WE_SWITCHED_RE = re.compile(
    r"we(?:'ve|\s+have)?\s+(?:recently\s+|now\s+|just\s+|finally\s+)?(?:switched|moved|migrated)\b"
)
_OUR_RE = re.compile(
    r"our\s+(?!own\b)[\w./ -]{1,40}?\s+(?:is|are|lives?|runs?|uses?|goes|go|sits?|should|must"
    r"|needs?\s+to|has\s+to|have\s+to)\b"
)
_TRANSIENT_RE = re.compile(
    r"\b(?:is|are)\s+(?:currently\s+|still\s+|now\s+|so\s+|really\s+|kind\s+of\s+)?(?:broken"
    r"|failing|down|slow|flaky|wrong|weird|red|green|passing|fine|ok|okay|done|ready|missing"
    r"|gone|outdated|empty|huge|a\s+mess|messed\s+up|not\s+working|out\s+of\s+date|stuck|dead"
    r"|offline|up|running|failed)\b"
)
_SUBJECT = r"(?!(?:it|this|that|these|those|there|they|he|she|i|you|we|what|which|who)\b)"
_SUBJECT_MODAL_RE = re.compile(
    _SUBJECT + r"[\w`'\"./()_ -]{2,60}?\s+(?:"
    r"(?P<neg>(?:must|should|shall|may|can|are|is)\s+(?:never|not\s+ever)"
    r"|must\s+not|mustn'?t|shall\s+not|(?:are|is)\s+not\s+allowed\s+to"
    r"|(?:aren'?t|isn'?t)\s+allowed\s+to)"
    r"|(?:must|should|shall|needs?\s+to|has\s+to|have\s+to)\s+always"
    r"|always\s+(?:has|have|needs?)\s+to)\b"
)
_ALL_MUST_RE = re.compile(
    r"(?:all|every|each|any)\s+[\w`'\"./_ -]{1,50}?\s+(?:must|should|need\s+to|needs\s+to"
    r"|has\s+to|have\s+to)\s+(?P<neg>not\b|never\b)?"
)
_CONDITIONAL_RE = re.compile(
    r"(?P<cue>whenever|every\s+time|each\s+time|any\s*time|when|if|after|before)\b[^,]{3,120},\s*"
)

_QUESTION_RE = re.compile(
    r"(?:(?:should|shall|do|does|did|is|are|was|were|have|has|will|can|could|would|may|might)"
    r"\s+(?:we|you|i|they|it|he|she|this|that|these|those|the|there|our|my)\b"
    r"|(?:why|what|how|where|which|who|whom|whose|when)\s+(?:do|does|did|is|are|was|were|should"
    r"|would|can|could|will|shall|have|has|don'?t|doesn'?t|didn'?t|not|isn'?t|aren'?t|about|if)\b"
    r"|any\s+(?:idea|reason)|is\s+it\b|isn'?t\s+it\b)"
)
_HYPOTHETICAL_RE = re.compile(
    r"\b(?:what\s+if|suppose|supposing|imagine|hypothetically|in\s+theory|i\s+wonder|wondering"
    r"|if\s+(?:i|we|you|it)\s+were|would\s+be\s+nice|would'?ve|could'?ve|should'?ve|we\s+could"
    r"|you\s+could|i\s+could|might\s+want|would\s+you|wouldn'?t|i'?d\s+rather\s+not\s+say)\b"
)
_HEDGE_RE = re.compile(
    r"\b(?:maybe|perhaps|probably|i\s+think|i\s+guess|i\s+believe|possibly|might|not\s+sure"
    r"|seems?|apparently|i\s+suspect)\b"
)
_ONE_OFF_RE = re.compile(
    r"\b(?:for\s+now|this\s+time|right\s+now|for\s+the\s+moment|at\s+the\s+moment|temporarily"
    r"|today|tonight|just\s+this\s+once|for\s+this\s+(?:task|pr|ticket|issue|change|commit|one"
    r"|file|function|test|step|bug)|in\s+this\s+(?:pr|file|function|commit|branch|session|task"
    r"|test|method|class)|until\s+(?:i|we|the)|anything\s+else|everything\s+else|the\s+rest"
    r"|other\s+files|yet)\b"
)
_FOR_THIS_RE = re.compile(r"\b(?:for|with|on)\s+(?:this|that|these|those|it)\W*$")
_IRREGULAR_PAST = (
    r"was|were|had|did|went|got|made|wrote|ran|took|saw|thought|knew|told|said|found|forgot"
    r"|broke|chose|gave|left|kept|meant|sent|built|bought|brought|caught|felt|lost|paid|spent"
    r"|understood|began|came|became|drove|fell|grew|heard|hid|stood|taught|threw|woke|wore|used"
)
_PAST_RE = re.compile(
    r"\b(?:used\s+to\b(?<!is\sused\sto)(?<!are\sused\sto)(?<!be\sused\sto)|previously|back\s+then"
    r"|in\s+the\s+past|ago|last\s+(?:week|month|year|time|sprint)|yesterday|earlier"
    r"|originally|at\s+first|before\s*$"
    r"|(?:i|we|you|they|he|she|it)\s+(?:(?:never|always|just|really|already|also|even|actually"
    r"|recently|all|both|once)\s+)*(?:\w+(?<!e)(?<!ne)ed|" + _IRREGULAR_PAST + r")\b)"
)
_PAST_WORD_RE = re.compile(r"(?:\w+(?<!e)ed|" + _IRREGULAR_PAST + r"|been)$")
_NEVER_STOP = _wordset(
    "mind again heard seen knew thought worked works got had been was were did really "
    "happens ends understood"
)
_DONT_STOP = _wordset(
    "worry mind bother know think care understand see remember get need have feel "
    "hesitate panic stress like want mean believe be really agree even expect recall "
    "quite fully forget"
)
_ALWAYS_STOP = _wordset(
    "a an the is was has had been same there it this that so good nice fun fails failing "
    "breaks works happens forget get gets seems like true ends"
)
_WE_STOP = _wordset(
    "get got have had hit see saw forget end run struggle fail lose seem know need want "
    "care think understand use"
)
# Words that make a plain instruction durable ("remember to ... before every release").
_CUE_RE = re.compile(
    r"\b(?:always|never|ever|anymore|any\s+more|again|whenever|every|each|after|before|when)\b"
)
_FACT_VERB_RE = re.compile(
    r"\b(?:is|are|lives?|runs?|uses?|needs?|requires?|must|should|can'?t|cannot|doesn'?t|don'?t"
    r"|won'?t|isn'?t|aren'?t|has|have|goes|go|expects?|breaks?|only\s+works|works|sits?|belongs?"
    r"|deploys?|points?|means?|contains?|reads?|writes?|owns?|handles?)\b"
)
_LOCATION_RE = re.compile(
    r"(?:the\s+|our\s+)?" + _SUBJECT + r"(?P<subj>[\w`'\"./ -]{2,40}?)\s+(?:is|are|lives?|sits?"
    r"|goes|go|belongs?|should\s+(?:go|live|be)|must\s+(?:go|live|be)|is\s+located|are\s+located"
    r"|is\s+defined|are\s+defined|is\s+kept|are\s+kept)\s+(?:in|under|at|inside)\s+"
    r"(?:the\s+)?(?P<loc>\S+)"
)
_PATH_RE = re.compile(r"`[^`]+`|\S*/\S*|\S+\.[a-z]{1,5}\b")
_INSTEAD_RE = re.compile(
    r"(?:(?:use|run|try|do|call)\s+(?P<a>.+?)\s+instead(?P<of>\s+of\s+.+)?"
    r"|instead,?\s+(?:use|run|try|do|call)\s+(?P<b>.+))$"
)
# "use `uv run pytest`, not `python -m pytest`" (masked: the backticks keep their places)
_CMD_CONTRAST_RE = re.compile(
    r"(?:(?:use|run|try|it'?s|call)\s+)?(?P<new>`[^`]+`)\s*,?\s*(?:not|instead\s+of|rather\s+than"
    r"|over)\s+(?P<old>`[^`]+`)$"
)
_CHOICE_RE = re.compile(
    r"(?:(?:let'?s\s+)?(?:just\s+)?(?:use|try|switch\s+to|go\s+with|stick\s+(?:to|with))"
    r"|it'?s|its|we\s+use|with|prefer|run"
    r"|that'?s|should\s+be)\s+"
)
_PRONOUN_END_RE = re.compile(r"\b(?:it|this|that|them|these|those|one|there|so|him|her)\W*$")
_WORD_RE = re.compile(r"[a-z][a-z0-9'_-]*")
_FUNCTION_WORDS = _wordset(
    "a an the to of in on for with and or but not no do does be is are it this that these those "
    "them they we you i me my our your us as at by from so just also please pls then than ever "
    "always never don't dont again anymore any all some thing things stuff here there up out it's "
    "its that's we're let's into about over"
)
# Words that may sit around tool names in a clause that is nothing but a tool choice.
_DIRECTIVE_WORDS = _FUNCTION_WORDS | _wordset(
    "use using uses run running install installing installs instead rather prefer prefers code "
    "calls call stick sticking standard standardize standardized choice pick default "
    "switch switched move moved migrate migrated stick go only package packages management "
    "manager managers http client clients library libraries lib test tests testing runner "
    "format formatting formatter lint linting linter type checking checker database databases "
    "db orm framework web env environment environments virtualenvs deps dependencies project "
    "repo repository codebase should must be default standard our ok lol thanks please "
    "everything anything anywhere new one ones tool tools python js node projects repos "
    "repositories codebases all every"
)

# Interaction preferences: (pattern, slug, kind, may stand alone). The first match wins. "May
# stand alone": a plain "be concise" or "ask before deleting files" is a standing request, while a
# plain "explain your changes" is usually about the task at hand.
_PREF_SLUGS: tuple[tuple[re.Pattern[str], str, str, bool], ...] = (
    (
        re.compile(
            r"\bask\b.*\bbefore\b.*\b(?:delet|remov|drop|overwrit|wip|rm\b|destroy|force|reset"
            r"|rewrit|truncat|destructive|irreversible)"
            r"|\b(?:delet|remov|drop|overwrit|wip|destroy|force[- ]push|truncat|rm\s+-rf)\w*\b.*"
            r"\b(?:without|unless)\b.*\b(?:ask|permission|confirm|approv|check)"
        ),
        "ask_before_destructive",
        "guard",
        True,
    ),
    (
        re.compile(
            r"\bask\b.*\bbefore\b.*\b(?:commit|push|merg)"
            r"|\b(?:commit|push|merg)\w*\b.*\b(?:without|unless|until)\b.*"
            r"\b(?:ask|permission|confirm|approv|tell|say|i\s)"
        ),
        "ask_before_commit",
        "guard",
        True,
    ),
    (
        re.compile(
            r"\bask\b.*\b(?:when|if|whenever)\b.*\b(?:unsure|uncertain|not\s+sure|in\s+doubt"
            r"|unclear|ambiguous|don'?t\s+know)|\b(?:unsure|uncertain|not\s+sure|in\s+doubt"
            r"|unclear|ambiguous)\b.*\bask\b|\bclarifying\s+questions?\b"
        ),
        "ask_when_uncertain",
        "preference",
        True,
    ),
    (
        re.compile(
            r"\b(?:concise|terse|brief|succinct|verbose|wordy|long-?winded|shorter\s+(?:answers"
            r"|responses|replies)|short\s+(?:answers|responses|replies)|to\s+the\s+point|essays?"
            r"|walls?\s+of\s+text|long\s+explanations?|keep\s+(?:it|answers|responses|replies"
            r"|your\s+(?:answers|responses|replies))\s+(?:short|brief))\b"
        ),
        "concise",
        "preference",
        True,
    ),
    (re.compile(r"\bapologi[sz]\w*|\bsay(?:ing)?\s+sorry\b"), "apologies", "preference", True),
    (re.compile(r"\bemojis?\b"), "emoji", "preference", True),
    (
        re.compile(
            r"\b(?:reply|respond|answer|talk|write|speak)\w*\b.*\bin\s+(?:english|german|french"
            r"|spanish|italian|portuguese|dutch|polish|russian|japanese|chinese|korean)\b"
        ),
        "reply_language",
        "preference",
        False,
    ),
    (re.compile(r"\bsummar(?:y|ies|ize|ise|izing|ising)\b"), "summaries", "preference", False),
    (
        re.compile(
            r"\b(?:explain|walk\s+me\s+through)\b.*\b(?:changes?|reasoning|plan|approach)\b"
        ),
        "explain_changes",
        "preference",
        False,
    ),
    (re.compile(r"\bask\b.*\bbefore\b"), "", "guard", True),
    (re.compile(r"\bexplain\b"), "", "preference", False),
    (
        re.compile(
            r"\bask(?:ing)?\b.*\b(?:permission|confirmation|approval)\b"
            r"|\bask(?:ing)?\s+(?:me\s+)?(?:whether|if)\s+(?:you\s+should|to)\b"
        ),
        "ask_for_confirmation",
        "preference",
        False,
    ),
)
_ARTIFACT_RE = re.compile(
    r"\b(?:commit\s+messages?|code|comments?|docstrings?|files?|readme|docs|changelog|logs?"
    r"|variables?|functions?|tests?|pr|pull\s+requests?|descriptions?|ui|output|errors?)\b"
)
# Every word one of the interaction patterns needs: a clause without any of them skips them all.
_INTERACTION_HINT_RE = re.compile(
    r"ask|concise|terse|brief|succinct|verbose|wordy|winded|short|point|essay|wall|explanation"
    r"|apologi|sorry|emoji|reply|respond|answer|talk|speak|summar|explain|walk\s+me|your"
    r"|permission|confirm|unsure|uncertain|doubt|unclear|ambiguous|clarif|english|german|french"
)
_INTERACTION_RE = re.compile(
    r"\b(?:your\s+(?:answers?|responses?|replies|messages?|explanations?|tone)|talk\s+to\s+me"
    r"|when\s+you\s+(?:respond|reply|answer))\b"
)
_INSTRUCTION_RE = re.compile(r"\b(?:use|run|never|don'?t|do\s+not|always|instead|not)\b")
_PLEASE_RE = re.compile(r"\b(?:please|pls|plz)\b\s*", re.IGNORECASE)
_VERSION_WORDS = _wordset("target targets version versions runtime on running require")
_ME_RE = re.compile(r"\b(?:me|myself)\b")
_MY_RE = re.compile(r"\bmy\b")
_HERE_END_RE = re.compile(r"\s+here$")
_TOKEN_RE = re.compile(r"[a-z0-9_]+")


# --- one clause -------------------------------------------------------------------------------


@dataclass
class _Hit:
    text: str
    kind: str
    polarity: int
    scope: str
    key: str | None
    pos: list[str] = field(default_factory=list)  # tools to use
    neg: list[str] = field(default_factory=list)  # tools not to use
    strong: bool = False  # a "never/don't" names one of the `neg` tools
    simple: bool = False  # nothing but a tool choice: merged per category, rendered from a template
    pref: bool = False  # a stated preference ("prefer X", "I prefer ..."): rendered "Prefer X"
    instead: bool = False  # "use X instead": about the rejected call, if any
    needs_rejection: bool = False  # meaningless without the rejected call ("use that instead")
    never: bool = False  # worded with "never" rather than "don't"
    tentative: bool = False  # a plain "use X": kept only if merged with a rule on the same slot
    tools: list[str] = field(default_factory=list)


@dataclass
class _State:
    durable: bool
    glob: bool
    project: bool
    pref: bool = False
    fact: bool = False
    convention: str | None = None  # "", "to", "that" ("the convention is to ...") or "colon"
    needs_cue: bool = False  # "remember to", "you should", "I want you to": durable only with a cue
    lead: str = ""  # words put before the copied body ("Never ", "Use ")
    prohibition: bool = False


def _trim_end(low: str) -> tuple[int, bool]:
    """Where the clause ends without trailing fillers ("lol", "!!", emoji), and if it asked "?"."""
    end = len(low)
    question = False
    while end:
        e = end
        while e and (
            low[e - 1] in _TRAIL_CHARS
            or "\u2600" <= low[e - 1] <= "\u27bf"
            or low[e - 1] >= "\U0001f300"
        ):
            question = question or low[e - 1] == "?"
            e -= 1
        if m := _TRAIL_WORD_RE.search(low, max(0, e - 16), e):
            e = m.start()
        if e == end:
            break
        end = e
    return end, question


def _skip_lead(low: str, i: int) -> int:
    m = _LEAD_RE.match(low, i)
    return m.end() if m else i


def _next_word(low: str, i: int) -> str:
    m = _WORD_RE.match(low, i)
    return m.group() if m else ""


def _content_words(text: str, stop: frozenset[str]) -> list[str]:
    return [w for w in _WORD_RE.findall(text) if w not in stop and len(w) > 1]


def _polish(text: str, scope: str) -> str:
    """Tidy a copied clause into a memory sentence: no fillers, "me" -> "the user", a period."""
    text = " ".join(text.split()).strip(" ,;:-")
    if scope == "global":
        text = _GLOBAL_STRIP_RE.sub("", text).strip(" ,;:-")
    low = text.lower()
    if "pl" in low:
        text = _PLEASE_RE.sub("", text).strip()
    if "me" in low or "my" in low:
        text = _MY_RE.sub("the user's", _ME_RE.sub("the user", text))
    if scope == "project":
        text = _HERE_END_RE.sub(" in this project", text)
    if text.lower().startswith("our "):
        text = "the " + text[4:]
    if text and text[0] != "`":
        text = text[0].upper() + text[1:]
    text = text.rstrip(" .!…,;:")
    return text + "." if text else ""


def _interaction(low: str) -> tuple[str, str, bool] | None:
    """(slug, kind, may stand alone) for a clause about how the assistant talks or acts."""
    if not _INTERACTION_HINT_RE.search(low):
        return None
    for rx, slug, kind, alone in _PREF_SLUGS:
        if rx.search(low):
            if kind == "preference" and slug != "ask_when_uncertain" and _ARTIFACT_RE.search(low):
                return None
            return slug, kind, alone
    if _INTERACTION_RE.search(low):
        return "", "preference", False
    return None


def _classify_tools(
    low: str, mentions: list[_Mention], j: int, prohibition: bool
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


_NEVER_WORD_RE = re.compile(r"\bnever\b")
_INSTEAD_WORD_RE = re.compile(r"\binstead\b(?!\s+of\b)")
_EVER_RE = re.compile(r"ever\s+", re.IGNORECASE)
_STRONG_NEG_RE = re.compile(r"\b(?:never|don'?t|dont|do\s+not|avoid|stop|no\s+more)\b")
_NEG_CUE_RE = re.compile(
    r"\b(?:not|no|instead\s+of|rather\s+than|over|than|ditch|drop|replac\w*|from|without)\b"
)


def _tool_key(pos: list[str], scope: str) -> str | None:
    cats = {TOOL_CATEGORIES[t] for t in pos}
    if len(cats) != 1:
        return None
    return ("user.pref." if scope == "global" else "project.") + cats.pop()


def _parse(cl: _Clause, correction: bool) -> _Hit | None:
    """The statement in one clause, or None when it holds no durable instruction."""
    low = cl.masked
    end, question = _trim_end(low)
    i = _skip_lead(low, 0)
    if correction:
        if polite := _POLITE_ONLY_RE.match(low, i):
            if not _INSTRUCTION_RE.search(low, polite.end()):
                return None  # "no worries", "no need, it's fine"
            i = polite.end()
        if m := _CORRECTION_LEAD_RE.match(low, i):
            i = _skip_lead(low, m.end())
    if i >= end or end - i > 260:
        return None
    if (question or _QUESTION_RE.match(low, i)) and not _POLITE_RULE_RE.match(low, i):
        return None
    body = low[i:end]
    glob = cl.glob or (
        _GLOBAL_HINT_RE.search(body) is not None and _GLOBAL_RE.search(body) is not None
    )
    st = _State(
        durable=cl.durable or glob,
        glob=glob,
        project=_PROJECT_HINT_RE.search(body) is not None and _PROJECT_RE.search(body) is not None,
    )
    i = _prefixes(low, i, st)
    if i >= end:
        return None
    # Cheap anchored matches decide first; the searches below only run for candidates.
    cond = _CONDITIONAL_RE.match(low, i)
    if cond is not None and cond.end() >= end:
        cond = None
    form, j = ("", i) if cond else _form(low, i, st, cl.first or correction)
    if form is None:
        return None
    plain = not (form or cond or st.lead or st.fact or st.durable or st.needs_cue or correction)
    if plain and st.convention is None and not _INTERACTION_HINT_RE.search(body):
        return _tentative_choice(cl, j, end, st)
    if _HYPOTHETICAL_RE.search(body) or _ONE_OFF_RE.search(body):
        return None
    if not correction and _FOR_THIS_RE.search(low):
        return None  # "don't use any libraries for this": about the task at hand
    if cond:
        return _parse_conditional(cl, i, cond, end, st, correction)
    return _finish(cl, i, j, end, st, correction, form)


def _prefixes(low: str, i: int, st: _State) -> int:
    """Consume "please", "from now on", "in this repo", "note that" ... and note what they imply."""
    for _ in range(8):
        if m := _POLITE_RE.match(low, i):
            pass
        elif m := _DURABLE_PREFIX_RE.match(low, i):
            st.durable = True
        elif m := _GLOBAL_PREFIX_RE.match(low, i):
            st.glob = st.durable = True
        elif m := _PROJECT_PREFIX_RE.match(low, i):
            st.project = True
            st.durable = st.durable or not m.group().startswith("here")
        elif m := _DECIDED_RE.match(low, i):
            st.durable = True
        elif m := _MAKE_SURE_RE.match(low, i):
            st.needs_cue = not st.durable
        elif m := _MODAL_RE.match(low, i):
            if m.group("always") or m.group().startswith(("you always", "we always")):
                st.durable = True
                st.lead = "Always "
            else:
                st.needs_cue = not st.durable
        elif m := _REMEMBER_TO_RE.match(low, i):
            st.needs_cue = not st.durable
        elif m := _FACT_PREFIX_RE.match(low, i):
            st.fact = True
        elif m := _CONVENTION_RE.match(low, i):
            st.durable = True
            st.convention = m.group("conn") or ("colon" if m.group("colon") else "")
            if m.group("colon"):
                st.lead = m.group("colon").capitalize() + " "
        elif m := _I_ALWAYS_RE.match(low, i):
            st.glob = st.durable = True
            if m.group("want"):
                st.pref = True
                verb = {"want": "wants", "like": "likes", "need": "needs"}[m.group("want")]
                st.lead = f"The user always {verb} "
                return m.end()
            st.lead = "Always "
        elif m := _I_WANT_RE.match(low, i):
            neg = m.group("neg")
            if m.group("you"):
                st.prohibition = neg is not None
                st.lead = "Never " if neg == "never" else "Do not " if neg else ""
                st.needs_cue = neg != "never" and not st.durable
            else:
                st.pref = True
                st.prohibition = neg is not None
                st.lead = (
                    "The user never wants "
                    if neg == "never"
                    else "The user does not want "
                    if neg
                    else "The user wants "
                )
                st.needs_cue = neg != "never" and not st.durable
                return m.end()
        else:
            break
        i = _skip_lead(low, m.end())
    return i


def _form(low: str, i: int, st: _State, opens_sentence: bool) -> tuple[str | None, int]:
    """The rule form at `i` and where the copied body starts; ("", i) if none, None to reject."""
    if st.lead.startswith("The user"):
        if st.needs_cue and not _CUE_RE.search(low, i):
            return None, i  # "I want a button that exports CSV" is a task
        return "want", i
    if m := _NO_MORE_RE.match(low, i):
        st.prohibition = st.durable = True
        st.lead = ""
        return "no_more", i
    if (m := _NO_RE.match(low, i)) and _next_word(low, m.end()) not in _NO_STOP:
        st.prohibition = True
        st.lead = ""
        return "no", i
    if m := _NEVER_RE.match(low, i):
        nxt = _next_word(low, m.end())
        if nxt in _NEVER_STOP or _PAST_WORD_RE.match(nxt):
            return None, i
        st.prohibition = st.durable = True
        st.lead = "Never "
        return "never", m.end()
    if (m := _DONT_RE.match(low, i)) or (m := _MODAL_NEG_RE.match(low, i)):
        nxt = _next_word(low, m.end())
        if nxt in _DONT_STOP or _PAST_WORD_RE.match(nxt):
            return None, i
        strong = "must" in m.group() or "shall" in m.group() or "never" in m.group()
        strong = strong or "ever" in m.group().split()
        # A bare "don't X" inside a task request ("fix it but don't touch the tests") is about
        # the task; one that opens its sentence, or has a cue, reads as a standing rule.
        if not (st.durable or strong or opens_sentence or _CUE_RE.search(low, m.end())):
            return None, i
        st.prohibition = st.durable = True
        st.lead = "Never " if "never" in m.group() or "ever" in m.group().split() else "Do not "
        return "dont", m.end()
    if m := _ALWAYS_RE.match(low, i):
        nxt = _next_word(low, m.end())
        if nxt in _ALWAYS_STOP or _PAST_WORD_RE.match(nxt):
            return None, i
        st.durable = True
        st.lead = "Always "
        return "always", m.end()
    if m := _STOP_RE.match(low, i):
        st.prohibition = st.durable = True
        st.lead = "Stop "
        return "stop", m.end()
    if m := _AVOID_RE.match(low, i):
        st.prohibition = st.durable = True
        st.lead = "Avoid "
        return "avoid", m.end()
    if m := _PREFER_RE.match(low, i):
        st.pref = st.durable = True
        st.lead = "Prefer "
        return "prefer", m.end()
    if m := _I_PREFER_RE.match(low, i):
        st.pref = st.durable = True
        st.lead = "" if m.group("you") else "Prefer "
        if m.group("you") and (neg := _YOU_DIDNT_RE.match(low, m.end())):
            st.prohibition = True
            st.lead = "Do not "
            return "dont", neg.end()
        if m.group("you"):
            st.durable = False
            st.needs_cue = True  # "I'd prefer you use the helper" is about this task
            return "", m.end()
        return "prefer", m.end()
    if m := _WE_ALWAYS_RE.match(low, i):
        nxt = _next_word(low, m.end())
        if nxt in _WE_STOP or _PAST_WORD_RE.match(nxt):
            return None, i
        never = m.group("adv") == "never"
        st.prohibition = never
        st.durable = True
        st.lead = "Never " if never else "Always "
        return ("never" if never else "always"), m.end()
    if m := _WE_DONT_RE.match(low, i):
        nxt = _next_word(low, m.end())
        if nxt in _DONT_STOP or nxt in _WE_STOP - {"use", "run"}:
            return None, i
        st.prohibition = st.durable = True
        st.lead = "Do not "
        return "dont", m.end()
    if m := _WE_USE_RE.match(low, i):
        st.fact = True
        st.lead = "Use "
        return "we_use", m.end()
    if _PROJECT_USES_RE.match(low, i):
        st.fact = True
        st.lead = ""
        return "we_use", i
    if m := _WE_SWITCHED_RE.match(low, i):
        st.fact = True
        return "switched", m.end()
    if _OUR_RE.match(low, i):
        if _TRANSIENT_RE.search(low, i):
            return None, i
        st.fact = True
        return "our", i
    if (m := _SUBJECT_MODAL_RE.match(low, i)) or (m := _ALL_MUST_RE.match(low, i)):
        st.durable = True
        st.prohibition = m.group("neg") is not None
        return "modal", i
    return "", i


def _parse_conditional(
    cl: _Clause, i: int, m: re.Match[str], end: int, st: _State, correction: bool
) -> _Hit | None:
    """'when/if/whenever ..., <rule>': the rule part decides, the whole clause is the text."""
    inter = _interaction(cl.masked[i:end])
    durable = st.durable or m.group("cue") in {"whenever", "every time", "each time", "anytime"}
    durable = durable or (inter is not None and inter[2])
    rest = replace(
        cl, raw=cl.raw[m.end() : end], masked=cl.masked[m.end() : end], first=True, conditioned=True
    )
    rest.durable, rest.glob = durable, st.glob
    hit = _parse(rest, correction)
    if hit is None or hit.simple or hit.text.startswith("The user"):
        return None
    if inter is not None:
        hit.kind = inter[1]
        hit.scope = "project" if st.project else "global"
        hit.key = f"user.pref.{inter[0]}" if inter[0] and hit.scope == "global" else None
    else:
        hit.key = None
        if hit.kind not in {"guard", "preference"}:
            hit.kind = "pattern"
    hit.text = _polish(cl.raw[i:end], hit.scope)
    return hit


def _finish(
    cl: _Clause, i: int, j: int, end: int, st: _State, correction: bool, form: str
) -> _Hit | None:
    """Checks common to every form, then kind, polarity, scope, key and text."""
    low, raw = cl.masked, cl.raw
    body = low[j:end]
    inter = _interaction(low[i:end])
    if not form:
        if st.convention is not None:
            form = "convention"
        elif st.fact:
            form = "fact"
        elif (
            st.lead
            or (st.durable and not st.needs_cue)
            or (st.needs_cue and _CUE_RE.search(low, j))
            or (inter is not None and inter[2])
        ):
            form = "imperative"
        elif correction:
            return _parse_correction(cl, j, end, st)
        else:
            return _tentative_choice(cl, j, end, st)
        standing = _CUE_RE.search(low, j) or (inter is not None and inter[2])
        if st.needs_cue and form == "imperative" and not correction and not standing:
            return None
    about_rejected = not cl.rejected.isdisjoint(_content_words(body, _FUNCTION_WORDS))
    if form == "no" and not (st.durable or (inter is not None and inter[2]) or about_rejected):
        return None  # "no emojis" is a standing request; "no tests yet" is news
    if form != "switched" and _PAST_RE.search(low, j, end):
        return None
    if form == "fact" and not _FACT_VERB_RE.search(body):
        return None
    if not _content_words(raw[j:end].lower(), _FUNCTION_WORDS):
        return None
    # "never do that", "don't add retries to it": the pronoun points at the task at hand
    dangling = _PRONOUN_END_RE.search(body) is not None and not cl.conditioned
    if dangling and (len(body.split()) <= 3 or inter is None):
        return None
    hedged = _HEDGE_RE.search(body) is not None
    if hedged and not st.fact:
        return None

    mentions = _mentions(raw, cl.vouched)
    tools = [m.tool for m in mentions if m.start >= j]
    pos, neg, strong = _classify_tools(_fold(raw), mentions, j, st.prohibition)
    if form == "switched":
        sw = switch_in(raw[j:end])
        if sw is not None:
            pos, neg = [sw[2]], [sw[1]]
        if not pos:
            return None
    if form == "we_use" and not (pos or neg or st.project or _LANG_VERSION_RE.search(body)):
        return None  # "we use this helper in three places" is not a convention
    residual = _content_words(_strip_tools(body, mentions, j), _DIRECTIVE_WORDS)
    simple = bool(pos or neg) and not residual
    simple = simple and len({TOOL_CATEGORIES[t] for t in pos + neg}) == 1
    if form == "switched" and not simple:
        return None

    scope = "global" if (st.glob or inter is not None) and not st.project else "project"
    polarity = -1 if (st.prohibition or strong) else 1
    if inter is not None:
        kind = inter[1]
    elif polarity == -1:
        kind = "guard"
    elif st.pref or (scope == "global" and not st.fact):
        kind = "preference"
    elif hedged:
        kind = "note"
    else:
        kind = "invariant"

    key: str | None = None
    if inter is not None and inter[0] and scope == "global":
        key = f"user.pref.{inter[0]}"
    elif not pos and not neg and scope == "project" and (lang := _LANG_VERSION_RE.search(body)):
        rest = body[: lang.start()] + body[lang.end() :]
        if not _content_words(rest, _DIRECTIVE_WORDS | _VERSION_WORDS):
            name = lang.group(1).lower()
            name = (
                "node"
                if name.startswith("node")
                else {"py": "python", "golang": "go"}.get(name, name)
            )
            key = f"project.{name}_version"

    copied = raw[j:end]
    if form == "convention":
        if st.convention == "colon":
            text = st.lead + copied
        else:
            text = copied if st.convention else "The convention in this project is " + copied
    elif form == "we_use" and st.lead:
        text = "Use " + copied
        if scope == "project" and not _PROJECT_RE.search(body):
            text += " in this project"
    elif st.lead == "Do not " and (ever := _EVER_RE.match(copied)):
        text = "Never " + copied[ever.end() :]
    else:
        text = st.lead + copied
    text = _polish(text, scope)
    if not text:
        return None
    return _Hit(
        text=text,
        kind=kind,
        polarity=polarity,
        scope=scope,
        key=key,
        pos=pos,
        neg=neg,
        strong=strong or (st.prohibition and bool(neg)),
        simple=simple,
        pref=st.pref,
        never=st.lead.startswith("Never") or _NEVER_WORD_RE.search(body) is not None,
        tools=tools,
    )


def _tentative_choice(cl: _Clause, j: int, end: int, st: _State) -> _Hit | None:
    """A plain "use pytest": kept only beside a rule on the same slot ("..., never unittest")."""
    if st.needs_cue or st.fact or _PAST_RE.search(cl.masked, j, end):
        return None
    m = _CHOICE_RE.match(cl.masked, j)
    if m is None:
        return None
    mentions = [mm for mm in _mentions(cl.raw, cl.vouched) if mm.start >= j]
    pos, neg, strong = _classify_tools(_fold(cl.raw), mentions, m.end(), False)
    residual = _content_words(_strip_tools(cl.masked[j:end], mentions, j), _DIRECTIVE_WORDS)
    if not pos or residual or len({TOOL_CATEGORIES[t] for t in pos + neg}) != 1:
        return None
    scope = "global" if st.glob and not st.project else "project"
    return _Hit(
        "",
        "invariant",
        1,
        scope,
        None,
        pos=pos,
        neg=neg,
        strong=strong,
        simple=True,
        tentative=True,
        tools=[mm.tool for mm in mentions],
    )


def _parse_correction(cl: _Clause, j: int, end: int, st: _State) -> _Hit | None:
    """Plain instructions count only in a correction: a tool choice, a location, an 'instead'."""
    low, raw = cl.masked, cl.raw
    body = low[j:end]
    scope = "global" if st.glob and not st.project else "project"
    mentions = [m for m in _mentions(raw, cl.vouched) if m.start >= j]
    if mentions:
        m = _CHOICE_RE.match(low, j)
        pos, neg, strong = _classify_tools(_fold(raw), mentions, m.end() if m else j, False)
        residual = _content_words(_strip_tools(body, mentions, j), _DIRECTIVE_WORDS)
        if (pos or neg) and not residual and len({TOOL_CATEGORIES[t] for t in pos + neg}) == 1:
            return _Hit(
                text=_polish(raw[j:end], scope),
                instead=_INSTEAD_WORD_RE.search(body) is not None,
                kind="invariant",
                polarity=-1 if strong else 1,
                scope=scope,
                key=None,
                pos=pos,
                neg=neg,
                strong=strong,
                simple=True,
                tools=[mm.tool for mm in mentions],
            )
    loc = _LOCATION_RE.match(low, j)
    if loc and not _PAST_RE.search(body) and _PATH_RE.fullmatch(_loc_text(raw, loc)):
        return _Hit(_polish(raw[j:end], "project"), "invariant", 1, "project", None)
    if cmd := _CMD_CONTRAST_RE.match(low, j, end):
        new, old = raw[cmd.start("new") : cmd.end("new")], raw[cmd.start("old") : cmd.end("old")]
        return _Hit(f"Run {new} instead of {old}.", "guard", 1, scope, None, instead=True)
    if inst := _INSTEAD_RE.match(low, j, end):
        what = inst.group("a") or inst.group("b") or ""
        if _content_words(what, _FUNCTION_WORDS) and not _PRONOUN_END_RE.search(what):
            hit = _Hit(_polish(raw[j:end], scope), "guard", 1, scope, None, instead=True)
            hit.needs_rejection = inst.group("of") is None
            return hit
    return None


def _loc_text(raw: str, loc: re.Match[str]) -> str:
    return raw[loc.start("loc") : loc.end("loc")].strip(".,;")


# --- a whole message --------------------------------------------------------------------------


def _render_tools(
    cat: str, pos: list[str], neg: list[str], never: bool, strong: bool, pref: bool, scope: str
) -> str:
    where = "in all projects" if scope == "global" else "in this project"
    phrase = _CATEGORY_PHRASE[cat]
    if not pos:
        return f"{'Never use' if never else 'Do not use'} {' or '.join(neg)} {where}."
    verb = "Prefer" if pref else "Use"
    chosen = " and ".join(pos)
    if neg and strong:
        return f"{verb} {chosen} {phrase} {where}; never use {' or '.join(neg)}."
    if neg:
        joiner = "over" if pref else "instead of"
        return f"{verb} {chosen} {joiner} {' or '.join(neg)} {phrase} {where}."
    return f"{verb} {chosen} {phrase} {where}."


def _merge_tools(
    cat: str, scope: str, group: list[_Hit], correction: bool, rejected_tools: list[str]
) -> tuple[Statement, bool]:
    """One statement for a message's plain choices in one category; (it, mentions rejection)."""
    pos: list[str] = []
    neg: list[str] = []
    tools: list[str] = []
    for h in group:
        pos += [t for t in h.pos if t not in pos]
        neg += [t for t in h.neg if t not in neg]
        tools += [t for t in h.tools if t not in tools]
    strong = any(h.strong for h in group)
    pref = any(h.pref for h in group)
    from_rejection = False
    if correction and pos:
        for t in rejected_tools:
            if TOOL_CATEGORIES[t] == cat and t not in pos and t not in neg:
                neg.append(t)
                from_rejection = True
    pos = [t for t in pos if t not in neg]
    tools += [t for t in neg if t not in tools]
    polarity = -1 if strong or not pos else 1
    if polarity == -1 or (correction and neg):
        kind = "guard"  # it records what the assistant must not do (again)
    elif pref or scope == "global":
        kind = "preference"
    else:
        kind = "invariant"
    never = any(h.never for h in group)
    text = _render_tools(cat, pos, neg, never, strong, pref, scope)
    uses_rejection = from_rejection or any(t in rejected_tools for t in tools)
    source = CORRECTION if correction else EXPLICIT
    key = _tool_key(pos, scope)
    return Statement(text, kind, polarity, scope, key, source, tuple(tools)), uses_rejection


def _short(command: str) -> str:
    command = " ".join(command.split()).replace("`", "'")
    return command if len(command) <= 80 else command[:77] + "..."


def _collect(
    text: str,
    correction: bool,
    rejected_tool: str | None = None,
    rejected_input: str | None = None,
) -> list[Statement]:
    source = CORRECTION if correction else EXPLICIT
    rejected_words = (
        frozenset(_TOKEN_RE.findall(rejected_input.lower())) if rejected_input else frozenset()
    )
    clauses = _clauses(text, rejected_words)
    hits = [h for cl in clauses if (h := _parse(cl, correction)) is not None]
    rejected_tools = mentioned_tools(rejected_input) if rejected_input else []
    rejected_cats = {TOOL_CATEGORIES[t] for t in rejected_tools}
    if rejected_input:
        note = f" (the user rejected `{_short(rejected_input)}`)"
    elif rejected_tool:
        note = f" (the user rejected a {_short(rejected_tool)} call)"
    else:
        note = ""

    def with_note(s: Statement) -> Statement:
        return replace(s, text=s.text[:-1] + note + ".")

    # Plain tool choices of one category ("use pnpm", "never npm") become one statement, placed
    # where the first of them was said.
    groups: dict[tuple[str, str], list[_Hit]] = {}
    slots: list[tuple[str, str] | _Hit] = []
    for hit in hits:
        if hit.needs_rejection and not note:
            continue  # "use the other helper instead" means nothing without the rejected call
        cat = TOOL_CATEGORIES[(hit.pos + hit.neg)[0]] if hit.simple else ""
        if hit.simple and hit.instead and rejected_input and cat not in rejected_cats:
            # "use uv run instead" after `python -m pytest`: about that call, not the uv slot
            hit.simple = False
            hit.kind = "guard"
        if hit.simple:
            gkey = (cat, hit.scope)
            if gkey not in groups:
                groups[gkey] = []
                slots.append(gkey)
            groups[gkey].append(hit)
        else:
            slots.append(hit)

    out: list[Statement] = []
    for slot in slots:
        if not isinstance(slot, _Hit) and all(h.tentative for h in groups[slot]):
            continue
        if isinstance(slot, _Hit):
            s = Statement(
                slot.text, slot.kind, slot.polarity, slot.scope, slot.key, source, tuple(slot.tools)
            )
            shared = slot.instead or any(t in rejected_tools for t in slot.tools)
            if not shared:
                words = _content_words(slot.text.lower(), _DIRECTIVE_WORDS)
                shared = not rejected_words.isdisjoint(words)
        else:
            s, shared = _merge_tools(*slot, groups[slot], correction, rejected_tools)
        out.append(with_note(s) if note and shared else s)

    seen: set[str] = set()
    unique = []
    for s in out:
        if s.text.lower() not in seen:
            seen.add(s.text.lower())
            unique.append(s)
    return unique


def explicit_statements(text: str) -> list[Statement]:
    """Rules the user states outright in a message ("from now on ...", "never ...", "we use X")."""
    return list(_explicit(text))


@functools.lru_cache(maxsize=256)  # the pre-filter and then the writer read the same messages
def _explicit(text: str) -> tuple[Statement, ...]:
    return tuple(_collect(text, False))


def corrections(
    text: str, rejected_tool: str | None = None, rejected_input: str | None = None
) -> list[Statement]:
    """Instructions in a message that corrects the assistant, optionally after a rejected call.

    `rejected_tool`/`rejected_input` describe the tool call the user just turned down ("Bash",
    "npm install"); a catalog tool in the input of the same category as the user's choice is
    recorded as the one to avoid, and a statement about that call says so in parentheses. A bare
    "no" or "stop" yields nothing: without an instruction there is nothing durable to remember.
    """
    return _collect(text, True, rejected_tool, rejected_input)
