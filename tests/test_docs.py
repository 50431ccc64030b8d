"""The docs (README.md and docs/) document every JSON-RPC method, MCP tool, CLI command and option
and error code; the tables generated from the code are current; the error tables of the code,
the docs and the OpenRPC document agree; the README stays short."""

from __future__ import annotations

import argparse
import ast
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from reos_memory import errors
from reos_memory.cli.reos import build_parser
from reos_memory.cli.sqrl import build_parser as build_sqrl_parser
from reos_memory.interfaces import rpc as codes
from reos_memory.interfaces.jsonrpc.methods import load_all
from tools import gen_docs

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PAGES = {p.name: p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md"))}


def _section(page: str, heading: str) -> str:
    """The text of a page from `heading` to the next heading of the same level."""
    text = PAGES[page]
    start = text.index(heading + "\n")
    level = heading.split(" ")[0]
    nxt = text.find("\n" + level + " ", start + 1)
    return text[start : nxt if nxt >= 0 else len(text)]


def test_the_generated_tables_are_current():
    for path, want in gen_docs.wanted().items():
        assert path.read_text(encoding="utf-8") == want, f"{path}: run python tools/gen_docs.py"


def test_the_readme_is_short_and_maps_every_page():
    assert len(README.splitlines()) <= 150, "the README is the door: details go to docs/"
    assert all(len(line) <= 400 for line in README.splitlines())
    missing = [name for name in PAGES if f"(docs/{name})" not in README]
    assert not missing, f"pages the README's map leaves out: {missing}"
    for name in ("agent", "app", "team"):  # run by tests/test_quickstarts.py
        assert f"<!-- quickstart:{name} -->" in README


def test_every_method_is_in_the_protocol_page():
    section = _section("protocol.md", "### Parameters and results")
    missing = [name for name in load_all().methods if f"`{name}`" not in section]
    assert not missing, f"methods missing from docs/protocol.md's parameters and results: {missing}"


def test_every_web_ui_page_is_in_the_readmes_ui_section():
    from reos_memory.interfaces.web.app import NAV

    text = PAGES["squirrel.md"]
    start = text.index("* **The web UI** (`sqrl ui`)")
    section = text[start : text.index("\n* **", start + 1)]
    missing = [label for _, label in NAV if f"**{label}**" not in section]
    assert not missing, f"web UI pages missing from the README's UI section: {missing}"


def test_every_team_ui_page_is_in_the_readme():
    from reos_memory.interfaces.team_http.ui import ADMIN_NAV, NAV

    section = _section("team-server.md", "## The team server's web UI")
    missing = [label for _, label in NAV + ADMIN_NAV if f"**{label}**" not in section]
    assert not missing, f"team UI pages missing from the README: {missing}"


def test_every_mcp_tool_is_in_the_readme():
    from reos_memory.interfaces.mcp import tool_definitions

    names = [t.name for t in tool_definitions()]
    assert names
    section = _section("agents.md", "## MCP server")
    missing = [n for n in names if f"| `{n}` |" not in section]
    assert not missing, f"MCP tools missing from docs/agents.md: {missing}"


def _parsers(
    parser: argparse.ArgumentParser, path: list[str]
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """The command line and parser of this command and of every subcommand below it, read from
    the parsers' subparsers actions (so a new command is seen without editing this test)."""
    yield " ".join(path), parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, [*path, name])


PARSERS = [*_parsers(build_parser(), ["reos-memory"]), *_parsers(build_sqrl_parser(), ["sqrl"])]
COMMANDS = [command for command, _ in PARSERS]
# every long option a user is shown in --help (hidden ones are internal)
OPTIONS = sorted(
    {
        (command, option)
        for command, parser in PARSERS
        for action in parser._actions
        if action.help != argparse.SUPPRESS
        for option in action.option_strings
        if option.startswith("--") and option != "--help"
    }
)


def test_the_command_walk_sees_nested_subcommands():
    assert {"reos-memory model prepare", "sqrl hooks install", "sqrl ingest"} <= set(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_cli_command_has_its_section(command):
    assert f"### `{command}`\n" in PAGES["commands.md"], f"docs/commands.md has no `{command}`"


@pytest.mark.parametrize(("command", "option"), OPTIONS)
def test_every_cli_option_is_in_its_commands_section(command, option):
    section = _section("commands.md", f"### `{command}`")
    assert re.search(r"`" + re.escape(option) + r"(?![\w-])", section), (
        f"docs/commands.md does not give {option} under `{command}`"
    )


def test_the_docs_error_table_is_the_generated_one():
    _, found, rest = PAGES["protocol.md"].partition(gen_docs.begin("errors"))
    table, found_end, _ = rest.partition(gen_docs.end("errors"))
    assert found and found_end, "docs/protocol.md's error table markers are missing"
    assert table == codes.markdown_table(), "run python tools/gen_docs.py"


def test_every_error_class_has_its_own_code_and_reason():
    classes = errors.published()
    assert len({c.code for c in classes}) == len(classes)
    assert len({c.reason for c in classes}) == len(classes)
    for cls in classes:
        assert cls.meaning, f"{cls.__name__} has no meaning"
        assert -32099 <= cls.code <= -32000 or cls.code in codes.MESSAGES, cls
    # the one domain error that is a protocol code says so the same way
    assert errors.InvalidInput.code == codes.INVALID_PARAMS
    assert {e["code"] for e in codes.ERROR_TABLE} == {c.code for c in classes} | set(codes.MESSAGES)
    assert len(codes.ERROR_TABLE) == len({e["code"] for e in codes.ERROR_TABLE})


def test_openrpc_errors_are_the_table():
    doc = json.loads((ROOT / "rpc_schema" / "openrpc.json").read_text(encoding="utf-8"))
    table = {e["code"]: e for e in codes.ERROR_TABLE}
    seen = 0
    for m in doc["methods"]:
        for e in m.get("errors", []):
            assert e["message"] == table[e["code"]]["reason"], m["name"]
            assert e["data"] == table[e["code"]]["meaning"], m["name"]
            seen += 1
    assert seen
    listed = doc["info"]["description"].split("Application errors: ")[1].split("; ")
    assert listed == [f"{e['code']} {e['reason']}" for e in codes.ERROR_TABLE]


def test_no_error_class_outside_errors_py_gives_itself_a_code():
    """A code or reason set on a class elsewhere would be missing from the published table."""
    offenders = []
    for path in (ROOT / "reos_memory").rglob("*.py"):
        if path.name == "errors.py" and path.parent.name == "reos_memory":
            continue
        for node in ast.walk(ast.parse(path.read_bytes())):
            if not isinstance(node, ast.ClassDef):
                continue
            for stmt in node.body:
                targets = (
                    stmt.targets
                    if isinstance(stmt, ast.Assign)
                    else [stmt.target]
                    if isinstance(stmt, ast.AnnAssign)
                    else []
                )
                names = {t.id for t in targets if isinstance(t, ast.Name)}
                if names & {"code", "reason"} and _is_error_class(node):
                    offenders.append(f"{path.relative_to(ROOT)}::{node.name}")
    assert offenders == KNOWN_LOCAL_ERRORS, offenders


# DumpError: refused dumps, met only by `reos-memory load` on the command line (never over the
# protocol), so it keeps the generic application code.
KNOWN_LOCAL_ERRORS = ["reos_memory/store/dump.py::DumpError"]


def _is_error_class(node: ast.ClassDef) -> bool:
    names = {c.__name__ for c in [errors.ReosError, *errors.published()]}
    return any(
        (isinstance(b, ast.Name) and b.id in names)
        or (isinstance(b, ast.Attribute) and b.attr in names)
        for b in node.bases
    )
