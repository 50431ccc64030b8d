"""One-line typos in every interface and the CLI, each alone, must fail mypy (issue 33).

    python tools/mutation_check.py [--only SUBSTRING]

Each mutation replaces the first occurrence of a line's text in one file of a copy of the
package (the working tree is never touched) and runs mypy on the copy; a mutation that mypy
passes is MISSED. Prints one line per mutation and the count caught; exit 1 if any is missed
or no longer applies (the text it looks for has moved: update the table).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# (what is typed wrong, file, text, typo)
MUTATIONS: list[tuple[str, str, str, str]] = [
    (
        "JSON-RPC: service method",
        "reos_memory/interfaces/jsonrpc/methods/squirrel.py",
        "ctx.app.squirrel.get_task_context(p)",
        "ctx.app.squirrel.get_task_contxt(p)",
    ),
    (
        "JSON-RPC: params type of a handler",
        "reos_memory/interfaces/jsonrpc/methods/squirrel.py",
        "params=t.MemoryIdParams, result=t.MemoryGetResult",
        "params=t.MemoryListParams, result=t.MemoryGetResult",
    ),
    (
        "JSON-RPC: result type of a handler",
        "reos_memory/interfaces/jsonrpc/methods/squirrel.py",
        "params=t.MemoryIdParams, result=t.MemoryGetResult",
        "params=t.MemoryIdParams, result=t.MemoryListResult",
    ),
    (
        "JSON-RPC: graph service argument",
        "reos_memory/interfaces/jsonrpc/methods/graph.py",
        "embedder=app.embedder_status(),",
        "embedder=app.embedder_statu(),",
    ),
    (
        "MCP (local): service method",
        "reos_memory/interfaces/mcp.py",
        "env.app.squirrel.search(p)",
        "env.app.squirrel.serch(p)",
    ),
    (
        "MCP (local): request keyword",
        "reos_memory/interfaces/mcp.py",
        "context_budget_tokens=min(a.budget_tokens",
        "context_budget_token=min(a.budget_tokens",
    ),
    (
        "MCP (local): result type of a tool",
        "reos_memory/interfaces/mcp.py",
        'result=ts.ForgetResult, kind="write")',
        'result=ts.FlushResult, kind="write")',
    ),
    (
        "team HTTP: service method",
        "reos_memory/interfaces/team_http/memory_methods.py",
        "svc.memories.deprecate(",
        "svc.memories.deprecat(",
    ),
    (
        "team HTTP: params type of a handler",
        "reos_memory/interfaces/team_http/memory_methods.py",
        "params=tapi.TeamMemoryAddParams, result=tapi.TeamMemoryResult",
        "params=tapi.TeamMemoryIdParams, result=tapi.TeamMemoryResult",
    ),
    (
        "team MCP: service method",
        "reos_memory/interfaces/team_http/mcp_endpoint.py",
        "svc.retrieval.get_task_context(",
        "svc.retrieval.get_task_contxt(",
    ),
    (
        "team MCP: request keyword",
        "reos_memory/interfaces/team_http/mcp_endpoint.py",
        "        context_budget_tokens=a.budget_tokens,",
        "        context_budget_token=a.budget_tokens,",
    ),
    (
        "team UI: service method",
        "reos_memory/interfaces/team_http/ui.py",
        "self.svc.memories.list,",
        "self.svc.memories.lst,",
    ),
    (
        "team UI: request keyword",
        "reos_memory/interfaces/team_http/ui.py",
        "api.MemoryIdParams(memory_id=memory_id)",
        "api.MemoryIdParams(memoryid=memory_id)",
    ),
    (
        "team UI: params type of a call",
        "reos_memory/interfaces/team_http/ui.py",
        "self.svc.memories.list, caller, api.MemoryListParams, raw",
        "self.svc.memories.list, caller, api.MemoryIdParams, raw",
    ),
    (
        "local UI: service method",
        "reos_memory/interfaces/web/app.py",
        "self.call(self.sq.get_memory, request",
        "self.call(self.sq.get_memry, request",
    ),
    (
        "local UI: params type of a call",
        "reos_memory/interfaces/web/app.py",
        "self.call(self.sq.list_memories, form_params(api.MemoryListParams, raw))",
        "self.call(self.sq.list_memories, form_params(api.MemoryIdParams, raw))",
    ),
    (
        "local UI: argument of a call",
        "reos_memory/interfaces/web/app.py",
        "(await self.call(self.sq.get_memory, mid)).memory",
        "(await self.call(self.sq.get_memory, mid, mid)).memory",
    ),
    (
        "hooks: service method",
        "reos_memory/interfaces/agent_hooks/context.py",
        "sq.get_task_context(p, relevant_only=req.prompt)",
        "sq.get_task_contxt(p, relevant_only=req.prompt)",
    ),
    (
        "hooks: request keyword",
        "reos_memory/interfaces/agent_hooks/context.py",
        "context_budget_tokens=req.budget",
        "context_budget_token=req.budget",
    ),
    (
        "hook worker: app attribute",
        "reos_memory/interfaces/agent_hooks/queue.py",
        "return self.app.squirrel",
        "return self.app.squirel",
    ),
    (
        "CLI sqrl: service method",
        "reos_memory/cli/sqrl.py",
        "app.squirrel.ingest_paths(",
        "app.squirrel.ingest_path(",
    ),
    (
        "CLI sqrl: request keyword",
        "reos_memory/cli/sqrl.py",
        "            tier=op.tier,",
        "            tir=op.tier,",
    ),
    (
        "CLI sqrl: service method on the facade",
        "reos_memory/cli/sqrl.py",
        "out = sq.flush(api.FlushParams",
        "out = sq.flsh(api.FlushParams",
    ),
    (
        "CLI reos: service attribute",
        "reos_memory/cli/reos.py",
        "app.indexer.pending_count()",
        "app.indexer.pending_cont()",
    ),
    (
        "team audit action (string)",
        "reos_memory/team/memories.py",
        'method: Action = "squirrel/memories/add"',
        'method: Action = "squirrel/memories/ad"',
    ),
    (
        "team method sent by a machine (string)",
        "reos_memory/squirrel/sync/writes.py",
        '"squirrel/memories/add"',
        '"squirrel/memories/ad"',
    ),
    (
        "rpc dispatch: reply field",
        "reos_memory/interfaces/jsonrpc/server.py",
        "result = spec.handler(ctx, params)",
        "result = spec.handler(ctx)",
    ),
    (
        "MCP tools: fit callback",
        "reos_memory/interfaces/mcp_tools.py",
        "data = fit(spec.name, msgspec.to_builtins(result))",
        "data = fit(msgspec.to_builtins(result))",
    ),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--only", default="", help="only the mutations whose label holds this")
    args = ap.parse_args()
    failed = caught = 0
    with tempfile.TemporaryDirectory(prefix="mutations-") as tmp:
        work = Path(tmp)
        for part in ("reos_memory", "tools", "harness", "pyproject.toml"):
            src = ROOT / part
            if src.is_dir():
                shutil.copytree(src, work / part, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy(src, work / part)
        mypy = [sys.executable, "-m", "mypy", "--cache-dir", str(work / ".mypy_cache")]
        base = subprocess.run(mypy, cwd=work, capture_output=True, text=True)
        if base.returncode != 0:
            print("mypy fails before any mutation:\n" + base.stdout)
            return 1
        chosen = [m for m in MUTATIONS if args.only in m[0]]
        for label, rel, old, new in chosen:
            path = work / rel
            text = path.read_text()
            if old not in text:
                print(f"NOT APPLIED  {label}: {old!r} is not in {rel}")
                failed += 1
                continue
            path.write_text(text.replace(old, new, 1))
            try:
                run = subprocess.run(mypy, cwd=work, capture_output=True, text=True)
            finally:
                path.write_text(text)
            errors = [x for x in run.stdout.splitlines() if ": error:" in x]
            if errors:
                caught += 1
                print(f"caught       {label}: {errors[0][:150]}")
            else:
                failed += 1
                print(f"MISSED       {label}")
    print(f"{caught} of {len(chosen)} caught")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
