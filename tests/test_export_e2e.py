"""memory/export and `reos-memory export`: DOT, Mermaid, and HTML checked in a real browser."""

from __future__ import annotations

import itertools
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.rpc_client import ROOT
from tests.conftest import make_block

pytestmark = pytest.mark.e2e


def build(srv):
    ids = {
        "chain": make_block(
            srv, "Because the cache was cold, warm it at boot", type="reasoning_chain", id="chain"
        ),
        "fact1": make_block(
            srv, 'The cache is "cold" after each deploy', type="knowledge_fact", id="fact1"
        ),
        "fact2": make_block(srv, "Warming takes 40 seconds", type="knowledge_fact", id="fact2"),
        "para": make_block(srv, "Notes <b>x</b> | [draft] </script>", id="para"),
        "prompt": make_block(
            srv, "Why is the first request slow?", type="user_prompt", id="prompt"
        ),
        "far": make_block(srv, "Unrelated far away block", id="far"),
    }
    for s, t, r, c in [
        ("chain", "fact1", "follows_from", 0.9),
        ("chain", "fact2", "supports", 0.6),
        ("para", "fact1", "references", 1.0),
        ("prompt", "chain", "caused_by", 0.8),
        ("far", "para", "related_to", 0.3),
    ]:
        srv.call(
            "memory/relationships/create",
            {"source_id": s, "target_id": t, "rel_type": r, "confidence": c},
        )
    return ids


def test_export_formats_and_neighbourhood(server):
    build(server)
    out = server.call("memory/export", {})
    assert out["nodes"] == 6 and out["edges"] == 5 and out["truncated"] is False
    dot = out["dot"]
    assert dot.startswith("digraph memory {") and dot.rstrip().endswith("}")
    assert '"chain" -> "fact1" [label="follows_from"' in dot
    assert '\\"cold\\"' in dot  # quotes escaped
    mer = out["mermaid"]
    assert mer.startswith("flowchart LR") and "-->|supports|" in mer
    assert (
        "<b>" not in mer and "&#124;" in mer and "&#91;draft&#93;" in mer and "</script>" not in mer
    )
    html = out["html"]
    assert html.startswith("<!doctype html>") and "http://" not in html.replace(
        "http://www.w3.org/2000/svg", ""
    )
    payload = html.split('<script id="graph-data" type="application/json">')[1].split("</script>")[
        0
    ]
    assert "<" not in payload and ">" not in payload  # block text cannot end the script tag
    nodes = {n["id"]: n["content"] for n in json.loads(payload)["nodes"]}
    assert nodes["para"] == "Notes <b>x</b> | [draft] </script>"
    near = server.call("memory/export", {"block_id": "chain", "depth": 1, "formats": ["dot"]})
    assert (
        near["nodes"] == 4 and near["edges"] == 3 and "html" not in near and "mermaid" not in near
    )
    assert '"far"' not in near["dot"]
    assert (
        server.call("memory/export", {"max_nodes": 2, "formats": ["mermaid"]})["truncated"] is True
    )
    assert server.error("memory/export", {"block_id": "ghost"}).code == -32004
    assert server.error("memory/export", {"formats": ["png"]}).code == -32602


def test_cli_export(server, db_path, tmp_path):
    build(server)

    def export(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "reos_memory", "export", "--db", str(db_path), *args]
        return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)

    out = tmp_path / "g.dot"
    r = export("--format", "dot", "--block", "para", "--depth", "1", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "3 blocks" in r.stderr and '"para" -> "fact1"' in out.read_text()
    r = export("--format", "mermaid")
    assert r.returncode == 0 and r.stdout.startswith("flowchart LR")
    r = export("--block", "ghost")
    assert r.returncode == 1 and "ghost" in r.stderr


CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1000,650",
]


@pytest.mark.browser
def browse_page(page: Path, tmp_path: Path, *args: str) -> str:
    chromium = shutil.which("chromium")
    assert chromium, "Debian's chromium is needed for this test (./dev setup installs it)"
    profile = tmp_path / f"profile{len(list(tmp_path.glob('profile*')))}"
    cmd = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args, page.as_uri()]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120).stdout


HOSTILE = (
    "<!--<script>",
    "</script><script>document.title='owned'</script>",
    "<img src=x onerror=\"document.title='owned'\">",
    "]]> & &amp; <![CDATA[ \\u003c/script>",
)


def test_html_stays_whole_with_hostile_block_text(server, tmp_path):
    ids = [make_block(server, text, act_id="hostile") for text in HOSTILE]
    for a, b in itertools.pairwise(ids):
        server.call(
            "memory/relationships/create",
            {"source_id": a, "target_id": b, "rel_type": "references"},
        )
    page = tmp_path / "hostile.html"
    page.write_text(server.call("memory/export", {"formats": ["html"]})["html"])
    dom = browse_page(page, tmp_path, "--dump-dom")
    assert f'data-drawn="{len(ids)}"' in dom, "the drawing script did not run to the end"
    assert "owned" not in dom.split("<title>", 1)[1].split("</title>", 1)[0]
    assert "<img" not in dom and dom.count('class="node"') == len(ids)  # text, never elements
    assert "&lt;!--&lt;script&gt;" in dom  # shown as the text it is


def test_html_draws_in_a_real_browser(server, tmp_path):
    from PIL import Image

    chromium = shutil.which("chromium")
    assert chromium, "Debian's chromium is needed for this test (./dev setup installs it)"
    build(server)
    page = tmp_path / "graph.html"
    page.write_text(server.call("memory/export", {"formats": ["html"]})["html"])

    def browse(*args: str) -> str:
        return browse_page(page, tmp_path, *args)

    dom = browse("--dump-dom")
    assert 'data-drawn="6"' in dom, "the drawing script did not finish"
    assert dom.count('class="node"') == 6 and dom.count('class="edge"') == 5
    assert "6 blocks, 5 relationships" in dom
    for x, y in re.findall(r'transform="translate\(([-\d.]+),([-\d.]+)\)"', dom):
        assert 0 < float(x) < 1000 and 0 < float(y) < 650
    shot = tmp_path / "graph.png"
    browse(f"--screenshot={shot}")
    img = Image.open(shot).convert("RGB")
    assert img.size == (1000, 650)
    counts = {colour: n for n, colour in img.getcolors(maxcolors=1 << 20)}
    # every block type's colour fills boxes on screen (palette order follows sorted type names)
    for colour in ("#4e79a7", "#f28e2b", "#59a14f", "#e15759"):
        rgb = tuple(int(colour[i : i + 2], 16) for i in (1, 3, 5))
        assert counts.get(rgb, 0) > 1500, f"{colour} boxes not drawn"
    # the boxes don't hide each other: four colours, six boxes of at least 150 px each
    assert (
        sum(
            counts.get(tuple(int(c[i : i + 2], 16) for i in (1, 3, 5)), 0)
            for c in ("#4e79a7", "#f28e2b", "#59a14f", "#e15759")
        )
        > 6 * 150 * 28
    )
    shutil.copy(shot, Path(tmp_path.parent) / "last-export-screenshot.png")


def test_export_never_migrates_backs_up_or_creates_the_database_it_reads(tmp_path):
    from reos_memory.store import Database
    from reos_memory.store.migrations import load_migrations, migrate

    def export(path):
        cmd = [sys.executable, "-m", "reos_memory", "export", "--db", str(path)]
        return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=120)

    old = tmp_path / "old.db"
    db = Database(str(old))
    migrate(db, load_migrations()[:-1])
    db.conn().execute(
        "INSERT INTO blocks(id,type,act_id,content_hash,created_at,updated_at)"
        " VALUES ('keep','paragraph','x','h','t','t')"
    )
    versions = db.conn().execute("SELECT version FROM schema_migrations").fetchall()
    db.close()
    done = export(old)
    assert (
        done.returncode == 1 and "older version" in done.stderr and "Traceback" not in done.stderr
    )
    db = Database(str(old))
    assert db.conn().execute("SELECT version FROM schema_migrations").fetchall() == versions
    db.close()
    assert not list(tmp_path.glob("*.bak"))
    missing = tmp_path / "nowhere.db"
    done = export(missing)
    assert done.returncode == 1 and "no database" in done.stderr and not missing.exists()
