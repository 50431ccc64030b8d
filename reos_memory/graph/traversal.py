"""Graph walks: breadth-first neighbourhoods and shortest / most confident paths."""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import apsw

from reos_memory.errors import InvalidInput, NotFound
from reos_memory.graph import api
from reos_memory.models import EdgeRef
from reos_memory.store import Database
from reos_memory.store import blocks as block_sql
from reos_memory.store.relationships import EdgeRow, edges_from

_REVERSE = {"outgoing": "incoming", "incoming": "outgoing", "both": "both"}


def _edge(row: EdgeRow) -> EdgeRef:
    return EdgeRef(
        id=row[0],
        source_block_id=row[1],
        target_block_id=row[2],
        relationship_type=row[3],
        confidence=row[4],
    )


def _strongest_first(rows: list[EdgeRow]) -> list[EdgeRow]:
    # Deterministic and useful when max_nodes truncates: confident edges win.
    return sorted(rows, key=lambda r: (-(r[4] if r[4] is not None else 1.0), r[0]))


@dataclass
class Neighbourhood:
    start_block_id: str
    visited_blocks: list[str]
    blocks_by_depth: dict[str, list[str]]
    edges: list[EdgeRef]
    truncated: bool = False
    depth_reached: int = 0
    extra: dict[str, object] = field(default_factory=dict)


def neighbourhood(db: Database, p: api.RelatedParams) -> api.RelatedResult:
    """memory/related: `related` on a request's params, as its result."""
    n = related(
        db,
        block_id=p.block_id,
        depth=p.depth,
        rel_types=p.rel_types,
        direction=p.direction,
        max_nodes=p.max_nodes,
    )
    return api.RelatedResult(
        start_block_id=n.start_block_id,
        visited_blocks=n.visited_blocks,
        blocks_by_depth=n.blocks_by_depth,
        edges=n.edges,
        truncated=n.truncated,
        depth_reached=n.depth_reached,
    )


def related(
    db: Database,
    *,
    block_id: str,
    depth: int = 2,
    rel_types: Sequence[str] | None = None,
    direction: str = "both",
    max_nodes: int = 50,
) -> Neighbourhood:
    """Blocks within `depth` hops, level by level, at most `max_nodes` of them (start included).

    Within a level, stronger edges are followed first, so a truncated answer keeps the most
    confident neighbours. `edges` lists every followed edge whose two ends were visited.
    """

    def tx(conn: apsw.Connection) -> Neighbourhood:
        if not block_sql.block_exists(conn, block_id):
            raise NotFound("block", block_id, field="block_id")
        visited: dict[str, int] = {block_id: 0}
        order = [block_id]
        by_depth: dict[str, list[str]] = {"0": [block_id]}
        edges: dict[str, EdgeRow] = {}
        frontier = [block_id]
        truncated = False
        reached = 0
        for d in range(1, depth + 1):
            if not frontier:
                break
            fset = set(frontier)
            nxt: list[str] = []
            for row in _strongest_first(edges_from(conn, frontier, direction, rel_types)):
                src, tgt = row[1], row[2]
                other = tgt if src in fset else src
                if other not in visited:
                    if len(visited) >= max_nodes:
                        truncated = True
                        continue
                    visited[other] = d
                    order.append(other)
                    nxt.append(other)
                edges.setdefault(row[0], row)
            if nxt:
                by_depth[str(d)] = nxt
                reached = d
            frontier = nxt
        return Neighbourhood(
            start_block_id=block_id,
            visited_blocks=order,
            blocks_by_depth=by_depth,
            edges=[_edge(r) for r in edges.values()],
            truncated=truncated,
            depth_reached=reached,
        )

    return db.read(tx)


def _check_ends(conn: apsw.Connection, start_id: str, end_id: str) -> None:
    for fld, bid in (("start_id", start_id), ("end_id", end_id)):
        if not block_sql.block_exists(conn, bid):
            raise NotFound("block", bid, field=fld)


def _result(start_id: str, edges: list[EdgeRow]) -> api.PathResult:
    nodes = [start_id]
    conf = 1.0
    for e in edges:
        nodes.append(e[2] if e[1] == nodes[-1] else e[1])
        conf *= e[4] if e[4] is not None else 1.0
    return api.PathResult(
        path=[_edge(e) for e in edges], found=True, length=len(edges), nodes=nodes, confidence=conf
    )


def _not_found() -> api.PathResult:
    return api.PathResult(path=None, found=False, length=0, nodes=None, confidence=None)


def shortest_path(
    db: Database, p: api.PathParams, *, max_expansions: int = 200_000
) -> api.PathResult:
    """Fewest-hop path (or, with `weighted`, the most confident one) of at most `max_depth` edges.

    Unweighted: bidirectional breadth-first search, always growing the smaller frontier.
    Weighted: Dijkstra on -log(confidence) over (block, hops) states, exact under the hop limit
    (more than `max_expansions` expanded blocks is refused). `direction` is the direction edges
    are followed from start to end.
    """

    def tx(conn: apsw.Connection) -> api.PathResult:
        _check_ends(conn, p.start_id, p.end_id)
        if p.start_id == p.end_id:
            return api.PathResult(path=[], found=True, length=0, nodes=[p.start_id], confidence=1.0)
        if p.weighted:
            return _most_confident(conn, p, max_expansions)
        return _bfs_path(conn, p)

    return db.read(tx)


def _bfs_path(conn: apsw.Connection, p: api.PathParams) -> api.PathResult:
    start, end, max_depth, direction = p.start_id, p.end_id, p.max_depth, p.direction
    # parent[node] = (edge that reached it, node it came from); depth[node] = hops from its side
    par_s: dict[str, tuple[EdgeRow, str] | None] = {start: None}
    par_t: dict[str, tuple[EdgeRow, str] | None] = {end: None}
    dep_s: dict[str, int] = {start: 0}
    dep_t: dict[str, int] = {end: 0}
    fr_s, fr_t = [start], [end]
    ds = dt = 0
    while fr_s and fr_t and ds + dt < max_depth:
        grow_s = len(fr_s) <= len(fr_t)
        frontier = fr_s if grow_s else fr_t
        par, dep, other = (par_s, dep_s, dep_t) if grow_s else (par_t, dep_t, dep_s)
        d = (ds if grow_s else dt) + 1
        fset = set(frontier)
        way = direction if grow_s else _REVERSE[direction]
        nxt: list[str] = []
        best: tuple[int, str] | None = None
        for row in _strongest_first(edges_from(conn, frontier, way, p.rel_types)):
            src, tgt = row[1], row[2]
            here, there = (src, tgt) if src in fset and (way != "incoming") else (tgt, src)
            if there in dep:
                continue
            par[there] = (row, here)
            dep[there] = d
            nxt.append(there)
            if there in other:
                total = d + other[there]
                if total <= max_depth and (best is None or total < best[0]):
                    best = (total, there)
        if grow_s:
            fr_s, ds = nxt, d
        else:
            fr_t, dt = nxt, d
        if best is not None:
            return _result(start, _join(best[1], par_s, par_t))
    return _not_found()


def _join(
    meet: str,
    par_s: dict[str, tuple[EdgeRow, str] | None],
    par_t: dict[str, tuple[EdgeRow, str] | None],
) -> list[EdgeRow]:
    left: list[EdgeRow] = []
    node = meet
    while (p := par_s[node]) is not None:
        left.append(p[0])
        node = p[1]
    left.reverse()
    node = meet
    while (p := par_t[node]) is not None:
        left.append(p[0])
        node = p[1]
    return left


def _most_confident(
    conn: apsw.Connection, p: api.PathParams, max_expansions: int
) -> api.PathResult:
    start, end, max_depth, direction = p.start_id, p.end_id, p.max_depth, p.direction
    # A state (node, hops) is only worth expanding if no cheaper state of that node used
    # as few or fewer hops; costs pop in order, so one check against the best hop count settles it.
    best_hops: dict[str, int] = {}
    heap: list[tuple[float, int, str, tuple]] = [(0.0, 0, start, ())]
    expansions = 0
    while heap:
        cost, hops, node, trail = heapq.heappop(heap)
        if node == end:
            return _result(start, list(_unwind(trail)))
        if best_hops.get(node, max_depth + 1) <= hops:
            continue
        best_hops[node] = hops
        if hops == max_depth:
            continue
        expansions += 1
        if expansions > max_expansions:
            raise InvalidInput(
                "max_depth",
                f"the weighted search explored more than {max_expansions} blocks; lower max_depth"
                " or filter rel_types",
            )
        for row in edges_from(conn, [node], direction, p.rel_types):
            nb = row[2] if row[1] == node and direction != "incoming" else row[1]
            if best_hops.get(nb, max_depth + 1) <= hops + 1:
                continue
            conf = row[4] if row[4] is not None else 1.0
            step = -math.log(max(conf, 1e-12))
            heapq.heappush(heap, (cost + step, hops + 1, nb, (row, trail)))
    return _not_found()


def _unwind(trail: tuple) -> list[EdgeRow]:
    out: list[EdgeRow] = []
    while trail:
        row, trail = trail
        out.append(row)
    out.reverse()
    return out
