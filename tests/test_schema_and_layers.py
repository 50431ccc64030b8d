"""Generated files are current, imports point one way (the README's coverage: test_docs.py)."""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

import pytest

from harness.rpc_client import Server
from reos_memory.interfaces.jsonrpc.methods import load_all
from reos_memory.interfaces.jsonrpc.openrpc import render
from tools.gen_openrpc import team_document

ROOT = Path(__file__).resolve().parents[1]


def test_committed_openrpc_is_current():
    committed = (ROOT / "rpc_schema" / "openrpc.json").read_text(encoding="utf-8")
    assert committed == render(load_all()), "run: python tools/gen_openrpc.py"
    team = (ROOT / "rpc_schema" / "team-openrpc.json").read_text(encoding="utf-8")
    assert team == team_document(), "run: python tools/gen_openrpc.py"


@pytest.mark.e2e
def test_rpc_discover_returns_the_committed_document(db_path):
    with Server(db_path) as srv:
        doc = srv.call("rpc.discover")
    assert doc == json.loads((ROOT / "rpc_schema" / "openrpc.json").read_text(encoding="utf-8"))
    names = {m["name"] for m in doc["methods"]}
    assert {
        "memory/related",
        "memory/path",
        "blocks/create",
        "memory/relationships/create",
    } <= names
    create = next(m for m in doc["methods"] if m["name"] == "memory/relationships/create")
    rel_type = next(p for p in create["params"] if p["name"] == "rel_type")
    assert len(rel_type["schema"]["enum"]) == 14


# A module may import only from its own layer or the ones listed. `cli -> app -> interfaces ->
# services (graph | squirrel | documents | team) -> (index, store, embeddings, llm)`: an interface
# never imports another interface, a service never imports an interface, nothing imports `cli`.
SERVICES = {"graph", "squirrel", "documents", "team"}
LOWER = {"index", "store", "embeddings", "llm", "_root"}
LAYERS = {
    "cli": {"app", "config", "logs", "interfaces"} | SERVICES | LOWER,
    "app": {"config", "logs", "interfaces"} | SERVICES | LOWER,
    "interfaces": {"config", "logs"} | SERVICES | LOWER,
    "graph": {"index", "store", "embeddings", "llm", "_root"},
    "squirrel": {"index", "store", "embeddings", "llm", "_root"},
    "documents": {"index", "store", "embeddings", "_root"},
    # the team server is Squirrel's shared half: it ranks, writes and types its wire with
    # Squirrel's code (one ranking, one writer); Squirrel never imports team
    "team": {"squirrel", "index", "store", "embeddings", "llm", "_root"},
    "index": {"store", "embeddings", "_root"},
    "embeddings": {"_root"},
    "llm": {"_root"},
    "store": {"_root"},
}
ROOT_MODULES = {"errors", "models", "heap", "stopwords", "json_types", "private_files", "__init__"}


def _layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1 or parts[1] in ROOT_MODULES:
        return "_root"
    return parts[1]


def _package_imports() -> list[tuple[str, str]]:
    """(importing module, imported module) for every import of the package by the package."""
    found = []
    pkg = ROOT / "reos_memory"
    for path in pkg.rglob("*.py"):
        mod = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_bytes())):
            if isinstance(node, ast.ImportFrom) and node.module == "reos_memory":
                # `from reos_memory import x`: x is a module or package (a layer), or a name of
                # the package itself (`__version__`: the root)
                targets = [
                    f"reos_memory.{a.name}"
                    for a in node.names
                    if (pkg / f"{a.name}.py").exists() or (pkg / a.name).is_dir()
                ]
            elif (
                isinstance(node, ast.ImportFrom)
                and node.module
                and node.module.startswith("reos_memory")
            ):
                # `from reos_memory.a import b`: b may be a module of a
                base = pkg.joinpath(*node.module.split(".")[1:])
                targets = [
                    f"{node.module}.{a.name}"
                    if (base / f"{a.name}.py").exists() or (base / a.name).is_dir()
                    else node.module
                    for a in node.names
                ]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.startswith("reos_memory")]
            else:
                continue
            found += [(mod, t) for t in targets if t != "reos_memory"]
    return found


def test_imports_point_one_way():
    bad = []
    for mod, t in _package_imports():
        layer = _layer(mod)
        if layer in ("_root", "__main__", "config", "logs"):
            allowed = {"_root", "config", "logs"} | ({"cli"} if layer == "__main__" else set())
        else:
            allowed = LAYERS[layer] | {layer}
        if _layer(t) not in allowed:
            bad.append(f"{mod} imports {t}")
    assert not bad, bad


# The memory logic both runtimes (the local service, the team server) run: it reads no store,
# the stores answer it through `gather.Source`.
SHARED_MEMORY_LOGIC = [
    "reos_memory.squirrel.memory.gather",
    "reos_memory.squirrel.memory.ranking",
    "reos_memory.squirrel.memory.policy",
]


def test_the_shared_memory_logic_imports_no_store():
    edges: dict[str, set[str]] = {}
    for mod, t in _package_imports():
        edges.setdefault(mod, set()).add(t)
    for start in SHARED_MEMORY_LOGIC:
        seen, todo = {start}, [start]
        while todo:
            for t in edges.get(todo.pop(), ()):
                if t not in seen:
                    seen.add(t)
                    todo.append(t)
        reached = sorted(t for t in seen if _layer(t) in ("store", "index", "embeddings", "llm"))
        assert not reached, f"{start} reaches {reached}"


# What every interface may share; each other part of interfaces/ is one interface. `web` renders
# pages for two of them (`sqrl ui` and the team server's UI) and imports no interface itself.
SHARED_BY_INTERFACES = {
    "services",
    "registry",
    "rpc",
    "openrpc",
    "stdio_process",
    "web",
    "mcp_tools",
    "__init__",
}


def _interface(module: str) -> str | None:
    parts = module.split(".")
    if len(parts) < 3 or parts[1] != "interfaces" or parts[2] in SHARED_BY_INTERFACES:
        return None
    return parts[2]


def test_the_shared_web_pages_import_no_interface():
    bad = [
        f"{mod} imports {t}"
        for mod, t in _package_imports()
        if mod.startswith("reos_memory.interfaces.web") and _interface(t)
    ]
    assert not bad, bad


def test_no_interface_calls_another():
    """JSON-RPC, MCP and the agent hooks each call the services, never one another."""
    bad = [
        f"{mod} imports {t}"
        for mod, t in _package_imports()
        if _interface(mod) and _interface(t) and _interface(mod) != _interface(t)
    ]
    assert not bad, bad


def test_the_layer_checks_see_a_violation(monkeypatch):
    fake = [
        ("reos_memory.interfaces.mcp", "reos_memory.interfaces.jsonrpc.server"),
        ("reos_memory.squirrel.facade", "reos_memory.interfaces.services"),
        ("reos_memory.graph.retrieval", "reos_memory.cli.report"),
    ]
    monkeypatch.setattr(sys.modules[__name__], "_package_imports", lambda: fake)
    with pytest.raises(AssertionError, match=r"interfaces\.jsonrpc\.server"):
        test_no_interface_calls_another()
    with pytest.raises(AssertionError) as err:
        test_imports_point_one_way()
    assert "interfaces.services" in str(err.value) and "cli.report" in str(err.value)


def test_tools_never_import_from_tests():
    for path in sorted((ROOT / "tools").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_bytes())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            assert not any(n == "tests" or n.startswith("tests.") for n in names), (
                f"{path.name} imports {names}: shared code lives in harness/"
            )


# SQL lives only in store/: elsewhere code calls store functions inside db.read/db.write.
_SQL_TEXT = re.compile(
    r"\bSELECT\b.*\bFROM\b|\bINSERT\s+(OR\s+\w+\s+)?INTO\b|\bUPDATE\s+\w+\s+SET\b"
    r"|\bDELETE\s+FROM\b|\b(CREATE|DROP|ALTER)\s+(TABLE|INDEX|VIEW|TRIGGER|VIRTUAL)\b"
    r"|\bPRAGMA\s+\w+|\bjson_each\s*\(|\bWITH\s+RECURSIVE\b",
    re.DOTALL,
)
_DB_CALLS = {"execute", "executemany", "executescript", "cursor", "fetchall", "fetchone"}
_NOT_SQL = {  # text that reads like SQL but is never run
    # embeddings/prepare.py: a sentence the embedding model is verified on
    "SELECT id, content FROM blocks WHERE act_id = ? ORDER BY created_at DESC LIMIT 10;",
}


def _sql_in(source: str) -> list[str]:
    """What in a module's source runs SQL against a connection or spells a query."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _DB_CALLS
        ):
            found.append(f"line {node.lineno}: .{node.func.attr}(...)")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
            "reos_memory.store"
        ):
            helpers = sorted({a.name for a in node.names} & {"fetch", "scalar"})
            if helpers:
                found.append(f"line {node.lineno}: imports {', '.join(helpers)} from store")
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value not in _NOT_SQL
            and _SQL_TEXT.search(node.value)
        ):
            found.append(f"line {node.lineno}: SQL text {node.value[:60]!r}")
    return found


def test_sql_lives_only_in_store():
    store = ROOT / "reos_memory" / "store"
    bad = [
        f"{path.relative_to(ROOT)} {what}"
        for path in sorted((ROOT / "reos_memory").rglob("*.py"))
        if store not in path.parents
        for what in _sql_in(path.read_text(encoding="utf-8"))
    ]
    assert not bad, "move these into a function under reos_memory/store/:\n" + "\n".join(bad)


@pytest.mark.parametrize(
    "source",
    [
        "def f(conn):\n    conn.execute('SELECT 1')\n",
        "def f(conn, rows):\n    conn.executemany(SQL, rows)\n",
        "from reos_memory.store import Database, fetch\n",
        "Q = 'SELECT id FROM blocks WHERE act_id = ?'\n",
        "def f(t):\n    return f'UPDATE memories SET {t} = ? WHERE id = ?'\n",
        "Q = ' AND id IN (SELECT value FROM json_each(?))'\n",
    ],
)
def test_the_sql_check_sees_sql(source):
    assert _sql_in(source)


def test_the_sql_check_passes_prose():
    source = '"""ADD / UPDATE / DEPRECATE a memory; select what to keep from the list."""\n'
    assert not _sql_in(source)
