"""Pictures of the graph: Graphviz DOT, Mermaid, and a self-contained HTML page that draws it.

The HTML page needs nothing from the network: the graph is embedded as JSON and laid out by a
small force-directed simulation written inline (deterministic, so the same graph draws the same).
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import apsw

from reos_memory.graph import api, traversal
from reos_memory.store import Database
from reos_memory.store import blocks as block_sql
from reos_memory.store import relationships as rel_sql

PALETTE = [
    "#4e79a7",
    "#f28e2b",
    "#59a14f",
    "#e15759",
    "#76b7b2",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
]


@dataclass
class GraphPicture:
    nodes: list[dict[str, Any]]
    edges: list[dict[str, Any]]
    truncated: bool


def export(db: Database, p: api.ExportParams) -> api.ExportResult:
    """memory/export: the picture `p` asks for, in each of `p.formats`."""
    pic = collect(
        db,
        block_id=p.block_id,
        depth=p.depth,
        act_id=p.act_id,
        rel_types=p.rel_types,
        max_nodes=p.max_nodes,
    )
    return api.ExportResult(
        nodes=len(pic.nodes),
        edges=len(pic.edges),
        truncated=pic.truncated,
        dot=to_dot(pic) if "dot" in p.formats else None,
        mermaid=to_mermaid(pic) if "mermaid" in p.formats else None,
        html=to_html(pic) if "html" in p.formats else None,
    )


def collect(
    db: Database,
    *,
    block_id: str | None = None,
    depth: int = 2,
    act_id: str | None = None,
    rel_types: Sequence[str] | None = None,
    max_nodes: int = 200,
) -> GraphPicture:
    """The neighbourhood of a block (breadth-first, as memory/related), or the graph of an act / all."""
    if block_id is not None:
        n = traversal.related(
            db, block_id=block_id, depth=depth, rel_types=rel_types, max_nodes=max_nodes
        )
        ids, truncated = n.visited_blocks, n.truncated
    else:
        ids = db.read(lambda c: block_sql.first_block_ids(c, act_id, max_nodes + 1))
        truncated = len(ids) > max_nodes
        ids = ids[:max_nodes]

    def load(conn: apsw.Connection) -> GraphPicture:
        blocks = block_sql.get_blocks(conn, ids)
        rows = rel_sql.edges_among(conn, ids, rel_types)
        nodes = [
            {
                "id": b,
                "type": blocks[b].type,
                "content": blocks[b].content,
                "act_id": blocks[b].act_id,
            }
            for b in ids
            if b in blocks
        ]
        edges = [
            {
                "id": r[0],
                "source": r[1],
                "target": r[2],
                "type": r[3],
                "confidence": r[4],
                "origin": r[5],
            }
            for r in rows
        ]
        return GraphPicture(nodes, edges, truncated)

    return db.read(load)


def _label(node: dict[str, Any], width: int = 40) -> str:
    text = " ".join(node["content"].split())
    if len(text) > width:
        text = text[: width - 1] + "…"
    return f"{node['type']}: {text}" if text else node["type"]


def _colors(nodes: list[dict[str, Any]]) -> dict[str, str]:
    types = sorted({n["type"] for n in nodes})
    return {t: PALETTE[i % len(PALETTE)] for i, t in enumerate(types)}


def to_dot(pic: GraphPicture) -> str:
    """Graphviz DOT text (render with `dot -Tsvg`)."""

    def q(s: str) -> str:
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'

    colors = _colors(pic.nodes)
    lines = [
        "digraph memory {",
        "  rankdir=LR;",
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontcolor="white"];',
        '  edge [fontname="Helvetica", fontsize=10];',
    ]
    for n in pic.nodes:
        lines.append(f"  {q(n['id'])} [label={q(_label(n))}, fillcolor={q(colors[n['type']])}];")
    for e in pic.edges:
        conf = 1.0 if e["confidence"] is None else e["confidence"]
        lines.append(
            f"  {q(e['source'])} -> {q(e['target'])} [label={q(e['type'])}, penwidth={1 + 2 * conf:.2f}];"
        )
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_mermaid(pic: GraphPicture) -> str:
    """Mermaid flowchart text (renders in GitHub, many editors and docs tools)."""

    def esc(s: str) -> str:
        return (
            html.escape(s, quote=True)
            .replace("|", "&#124;")
            .replace("[", "&#91;")
            .replace("]", "&#93;")
        )

    short = {n["id"]: f"n{i}" for i, n in enumerate(pic.nodes)}
    colors = _colors(pic.nodes)
    lines = ["flowchart LR"]
    for n in pic.nodes:
        lines.append(f'  {short[n["id"]]}["{esc(_label(n))}"]')
    for e in pic.edges:
        lines.append(f"  {short[e['source']]} -->|{esc(e['type'])}| {short[e['target']]}")
    for t, c in colors.items():
        cls = "t_" + "".join(ch if ch.isalnum() else "_" for ch in t)
        members = ",".join(short[n["id"]] for n in pic.nodes if n["type"] == t)
        lines.append(f"  classDef {cls} fill:{c},color:#fff")
        lines.append(f"  class {members} {cls}")
    return "\n".join(lines) + "\n"


def to_html(pic: GraphPicture, title: str = "reos-memory graph") -> str:
    """One HTML file, no external resources, that lays out and draws the graph as SVG."""
    data = {
        "nodes": [
            {**n, "label": _label(n, 28), "color": _colors(pic.nodes)[n["type"]]} for n in pic.nodes
        ],
        "edges": pic.edges,
        "truncated": pic.truncated,
    }
    # no `<`, `>` or `&` inside the script element at all: `<!--<script` in block text would
    # otherwise switch the HTML parser into a state where the real `</script>` no longer ends it
    payload = (
        json.dumps(data, ensure_ascii=False)
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
    )
    return _HTML.replace("__TITLE__", html.escape(title)).replace("__DATA__", payload)


_HTML = r"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>__TITLE__</title>
<style>
 body{margin:0;font-family:Helvetica,Arial,sans-serif;background:#fafafa;color:#222}
 header{padding:8px 14px;background:#263238;color:#eceff1;font-size:14px}
 #legend span{display:inline-block;margin-right:12px} #legend i{display:inline-block;width:10px;height:10px;margin-right:4px;border-radius:2px}
 svg{display:block;width:100vw;height:calc(100vh - 36px)}
 .edge{stroke:#78909c;fill:none} .elabel{font-size:10px;fill:#546e7a}
 .node rect{stroke:#263238;stroke-width:1} .node text{font-size:11px;fill:#fff;pointer-events:none}
</style></head>
<body><header><b>__TITLE__</b> &nbsp; <span id="summary"></span> &nbsp; <span id="legend"></span></header>
<svg id="graph" xmlns="http://www.w3.org/2000/svg">
 <defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
 <path d="M0,0 L10,5 L0,10 z" fill="#78909c"/></marker></defs></svg>
<script id="graph-data" type="application/json">__DATA__</script>
<script>
(function(){
 const g = JSON.parse(document.getElementById('graph-data').textContent);
 const svg = document.getElementById('graph'), NS = 'http://www.w3.org/2000/svg';
 const W = svg.clientWidth || 1000, H = svg.clientHeight || 700, n = g.nodes.length;
 document.getElementById('summary').textContent = n + ' blocks, ' + g.edges.length + ' relationships' + (g.truncated ? ' (truncated)' : '');
 const types = {}; g.nodes.forEach(d => types[d.type] = d.color);
 // the legend built as elements, its colours set through the DOM: no markup from data, and
 // nothing a Content-Security-Policy without 'unsafe-inline' would block (the web UI serves it)
 const legend = document.getElementById('legend');
 Object.keys(types).sort().forEach(t => { const s = document.createElement('span'), i = document.createElement('i'); i.style.background = types[t]; s.append(i, t); legend.append(s); });
 // deterministic start on a circle, then Fruchterman-Reingold
 const idx = {}; g.nodes.forEach((d, i) => { idx[d.id] = i; d.x = W/2 + Math.cos(2*Math.PI*i/Math.max(n,1)) * W/3; d.y = H/2 + Math.sin(2*Math.PI*i/Math.max(n,1)) * H/3; });
 const E = g.edges.filter(e => e.source in idx && e.target in idx);
 const k = Math.sqrt(W * H / Math.max(n, 1)) * 0.6; let t = W / 8;
 for (let it = 0; it < 300; it++) {
  const dx = new Float64Array(n), dy = new Float64Array(n);
  for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) {
   let ddx = g.nodes[i].x - g.nodes[j].x, ddy = g.nodes[i].y - g.nodes[j].y, dist = Math.hypot(ddx, ddy) || 0.01;
   const f = k * k / dist; ddx /= dist; ddy /= dist; dx[i] += ddx * f; dy[i] += ddy * f; dx[j] -= ddx * f; dy[j] -= ddy * f; }
  for (const e of E) { const a = idx[e.source], b = idx[e.target];
   let ddx = g.nodes[a].x - g.nodes[b].x, ddy = g.nodes[a].y - g.nodes[b].y, dist = Math.hypot(ddx, ddy) || 0.01;
   const f = dist * dist / k; ddx /= dist; ddy /= dist; dx[a] -= ddx * f; dy[a] -= ddy * f; dx[b] += ddx * f; dy[b] += ddy * f; }
  for (let i = 0; i < n; i++) { const d = Math.hypot(dx[i], dy[i]) || 1, s = Math.min(d, t) / d;
   g.nodes[i].x = Math.min(W - 130, Math.max(130, g.nodes[i].x + dx[i] * s)); g.nodes[i].y = Math.min(H - 25, Math.max(25, g.nodes[i].y + dy[i] * s)); }
  t *= 0.985; }
 function el(name, attrs, parent){ const e = document.createElementNS(NS, name); for (const a in attrs) e.setAttribute(a, attrs[a]); (parent || svg).appendChild(e); return e; }
 const edgeLayer = el('g', {id: 'edges'}), nodeLayer = el('g', {id: 'nodes'});
 // nodes first, so each box can be sized to its measured label
 for (const d of g.nodes) { const grp = el('g', {class: 'node', 'data-id': d.id}, nodeLayer);
  const rect = el('rect', {y: -16, height: 32, rx: 8, fill: d.color}, grp);
  const tt = el('title', {}, grp); tt.textContent = d.type + ' ' + d.id + '\n' + d.content;
  const tx = el('text', {x: 0, y: 4, 'text-anchor': 'middle'}, grp); tx.textContent = d.label;
  d.hw = Math.max(40, tx.getComputedTextLength() / 2 + 10);
  rect.setAttribute('x', -d.hw); rect.setAttribute('width', 2 * d.hw); d.grp = grp; }
 // the layout saw points; now that boxes have widths, push overlapping boxes apart
 for (let pass = 0; pass < 200; pass++) { let moved = false;
  for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) { const a = g.nodes[i], b = g.nodes[j];
   const ox = a.hw + b.hw + 12 - Math.abs(a.x - b.x), oy = 64 - Math.abs(a.y - b.y);
   if (ox > 0 && oy > 0) { moved = true; const s = (a.y <= b.y ? -1 : 1) * oy / 2; a.y += s; b.y -= s; } }
  for (const d of g.nodes) { d.x = Math.min(W - d.hw - 4, Math.max(d.hw + 4, d.x)); d.y = Math.min(H - 20, Math.max(20, d.y)); }
  if (!moved) break; }
 for (const d of g.nodes) d.grp.setAttribute('transform', 'translate(' + d.x + ',' + d.y + ')');
 for (const e of E) { const a = g.nodes[idx[e.source]], b = g.nodes[idx[e.target]];
  const ang = Math.atan2(b.y - a.y, b.x - a.x), c = Math.abs(Math.cos(ang)) || 1e-9, sn = Math.abs(Math.sin(ang)) || 1e-9;
  const r = Math.min(b.hw / c, 16 / sn) + 2;
  el('line', {class: 'edge', x1: a.x, y1: a.y, x2: b.x - Math.cos(ang) * r, y2: b.y - Math.sin(ang) * r,
   'stroke-width': 1 + 2 * (e.confidence == null ? 1 : e.confidence), 'marker-end': 'url(#arrow)'}, edgeLayer);
  const lab = el('text', {class: 'elabel', x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 - 4, 'text-anchor': 'middle'}, edgeLayer); lab.textContent = e.type; }
 document.body.setAttribute('data-drawn', String(n));
})();
</script></body></html>
"""
