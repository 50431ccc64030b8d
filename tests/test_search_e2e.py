"""memory/search and memory/index/* over real stdio, with the deterministic hash embedder."""

from __future__ import annotations

import time

import pytest

from harness.rpc_client import Server
from tests.conftest import NO_CATCH_UP, link, make_block

pytestmark = pytest.mark.e2e


def ids(result):
    return [m["block_id"] for m in result["matches"]]


def test_semantic_keyword_and_markdown(server):
    auth = make_block(
        server, "Authentication uses JWT tokens stored in an HttpOnly cookie", id="auth"
    )
    make_block(server, "The database runs on PostgreSQL 15 with nightly backups", id="db")
    make_block(server, "Deploys go out every Tuesday after the standup", id="deploy")
    res = server.call(
        "memory/search", {"query": "how are authentication tokens stored?", "max_results": 3}
    )
    assert res["query"] == "how are authentication tokens stored?"
    top = res["matches"][0]
    assert (
        top["block_id"] == auth and top["source"] == "semantic" and top["block_type"] == "paragraph"
    )
    assert set(top["via"]) == {"vector", "keyword"}
    b = top["score_breakdown"]
    assert b["vector_rank"] == 1 and b["keyword_rank"] == 1 and b["final"] == top["score"]
    assert 0 < top["score"] <= 1
    assert res["stats"]["semantic_available"] is True and res["stats"]["returned"] == len(
        res["matches"]
    )
    md = res["markdown"]
    assert md.startswith("## Relevant Memory\n\n*Retrieved ")
    assert "### Memory #1 [" in md and "(semantic)" in md and "*Type: paragraph | Score: " in md
    assert "Authentication uses JWT tokens" in md


def test_graph_expansion_and_chain(server):
    a = make_block(server, "Use httpx as the HTTP client because requests hit SSL errors", id="a")
    b = make_block(server, "Retry policy: three attempts with exponential backoff", id="b")
    c = make_block(server, "Timeouts are five seconds everywhere", id="c")
    link(server, a, b, "references", 0.9)
    link(server, b, c, "supports", 0.8)
    res = server.call(
        "memory/search", {"query": "which HTTP client should I use for SSL", "max_results": 10}
    )
    by = {m["block_id"]: m for m in res["matches"]}
    assert res["matches"][0]["block_id"] == a
    assert by[b]["source"] in ("graph", "both") and by[b]["relationship_chain"][0] == "references"
    assert by[c]["relationship_chain"] == ["references", "supports"] and by[c]["reached_from"] == a
    assert by[c]["score"] < by[b]["score"] < by[a]["score"]
    assert "*Connected via: references → supports*" in res["markdown"]
    plain = server.call(
        "memory/search", {"query": "which HTTP client should I use for SSL", "include_graph": False}
    )
    assert c not in ids(plain)
    depth1 = server.call(
        "memory/search", {"query": "which HTTP client should I use for SSL", "graph_depth": 1}
    )
    assert c not in ids(depth1) or depth1["matches"][ids(depth1).index(c)]["source"] != "graph"


def test_corrected_block_ranks_below_its_replacement(server):
    old = make_block(server, "The API rate limit is 100 requests per minute", id="old")
    new = make_block(server, "Correction: limits changed last month", id="new")
    link(server, new, old, "corrects")
    res = server.call("memory/search", {"query": "API rate limit requests per minute"})
    order = ids(res)
    assert order.index(new) < order.index(old)
    by = {m["block_id"]: m for m in res["matches"]}
    assert by[old]["superseded_by"] == new
    assert by[old]["score_breakdown"]["correction_penalty"] is not None
    assert "*Superseded by Memory #1*" in res["markdown"]
    # without graph expansion the old block is still marked down
    flat = server.call(
        "memory/search", {"query": "API rate limit requests per minute", "include_graph": False}
    )
    flat_old = next(m for m in flat["matches"] if m["block_id"] == old)
    assert flat_old["superseded_by"] == new
    assert (
        flat_old["score"]
        < flat_old["score_breakdown"]["fusion"] * flat_old["score_breakdown"]["type_weight"]
    )


def test_act_filter_modes_and_limits(server):
    make_block(server, "alpha project uses kafka streams", act_id="act-1", id="k1")
    make_block(server, "beta project uses kafka connect", act_id="act-2", id="k2")
    assert ids(server.call("memory/search", {"query": "kafka", "act_id": "act-2"})) == ["k2"]
    assert set(ids(server.call("memory/search", {"query": "kafka"}))) == {"k1", "k2"}
    kw = server.call("memory/search", {"query": "kafka", "mode": "keyword"})
    assert kw["stats"]["semantic_available"] is False and all(
        m["source"] == "keyword" for m in kw["matches"]
    )
    vec = server.call("memory/search", {"query": "kafka streams", "mode": "vector"})
    assert (
        all("keyword" not in m["via"] for m in vec["matches"])
        and vec["matches"][0]["block_id"] == "k1"
    )
    assert len(server.call("memory/search", {"query": "kafka", "max_results": 1})["matches"]) == 1
    assert server.call("memory/search", {"query": "zzzz qqqq"})["matches"] == []
    assert server.call("memory/search", {"query": "zzzz qqqq"})["markdown"] == ""
    # user text is never FTS syntax
    for q in ['"unbalanced', "NEAR(a b)", "a* OR -b", "col:val", "^"]:
        server.call("memory/search", {"query": q})
    err = server.error("memory/search", {"query": ""})
    assert err.code == -32602 and err.data["field"] == "$.query"
    err = server.error("memory/search", {"query": "x", "mode": "psychic"})
    assert "hybrid" in err.error["message"]


def test_index_lifecycle_and_stale_detection(server):
    a = make_block(server, "first text", id="a")
    stats = server.call("memory/stats")
    assert (
        stats["total_embeddings"] == 1
        and stats["stale_embeddings"] == 0
        and stats["unindexed_blocks"] == 0
    )
    server.call("blocks/update", {"block_id": a, "content": "second text", "index": False})
    assert server.call("memory/stats")["stale_embeddings"] == 1
    assert server.call("memory/index/block", {"block_id": a}) == {
        "indexed": True,
        "block_id": a,
        "reason": None,
    }
    assert server.call("memory/stats")["stale_embeddings"] == 0
    server.call("blocks/update", {"block_id": a, "content": "third text"})  # re-embedded on update
    assert server.call("memory/stats")["stale_embeddings"] == 0
    assert server.call("memory/index/remove", {"block_id": a}) == {"removed": True, "block_id": a}
    assert server.call("memory/stats")["unindexed_blocks"] == 1
    assert server.call("memory/index/remove", {"block_id": a})["removed"] is False
    assert server.error("memory/index/block", {"block_id": "ghost"}).code == -32004
    empty = server.call("blocks/create", {"type": "divider", "act_id": "act-1"})["block"]["id"]
    assert server.call("memory/index/block", {"block_id": empty})["reason"] == "empty_content"


def test_index_batch_reports_progress_and_failures(db_path):
    with Server(db_path, env=NO_CATCH_UP) as server:
        _index_batch_progress_and_failures(server)


def _index_batch_progress_and_failures(server):
    made = [
        make_block(server, f"note number {i} about topic {i % 3}", index=False) for i in range(70)
    ]
    assert server.call("memory/stats")["unindexed_blocks"] == 70
    rid = server.request(
        "memory/index/batch", {"block_ids": [*made[:40], "ghost"], "progress_token": "tok"}
    )
    res = server.response(rid)["result"]
    assert res["indexed"] == 40 and res["failed"] == 1 and res["total"] == 41
    assert res["failures"] == [{"block_id": "ghost", "reason": "not_found"}]
    progress = [n["params"] for n in server.notifications if n["method"] == "$/progress"]
    assert progress and all(p["token"] == "tok" for p in progress)
    assert progress[-1]["done"] == progress[-1]["total"] == 40
    rest = server.call("memory/index/batch", {})
    assert rest["indexed"] == 30
    assert server.call("memory/stats")["unindexed_blocks"] == 0
    assert server.call("memory/index/batch", {})["total"] == 0


def test_without_a_model_keyword_and_graph_keep_working(db_path):
    with Server(db_path, embedder="none") as srv:
        a = make_block(srv, "kubernetes cluster upgrade checklist", id="a")
        b = make_block(srv, "drain nodes one at a time", id="b")
        link(srv, a, b, "references")
        res = srv.call("memory/search", {"query": "kubernetes upgrade"})
        assert res["stats"]["semantic_available"] is False
        assert "no embedder" in res["stats"]["semantic_unavailable_reason"]
        assert res["stats"]["total_semantic"] == 0
        assert ids(res) == [a, b] and res["matches"][0]["source"] == "keyword"
        assert res["matches"][1]["source"] == "graph"
        emb = srv.call("memory/stats")["embedder"]
        assert emb["status"] == "disabled" and emb["backend"] == "none"
        err = srv.error("memory/index/batch", {})
        assert err.code == -32010 and err.data["reason"] == "embedder_unavailable"
        assert srv.call("memory/related", {"block_id": a})["visited_blocks"] == [a, b]


def test_onnx_without_prepared_model_degrades_and_says_why(tmp_path):
    with Server(
        tmp_path / "m.db", embedder="onnx", env={"REOS_MEMORY_MODEL_DIR": str(tmp_path / "nowhere")}
    ) as srv:
        make_block(srv, "stored even without a model", id="x")
        res = srv.call("memory/search", {"query": "stored model"})
        assert ids(res) == ["x"] and "model prepare" in res["stats"]["semantic_unavailable_reason"]
        emb = srv.call("memory/stats")["embedder"]
        assert emb["status"] == "failed" and "model prepare" in emb["detail"]


def test_vec0_and_memory_index_agree(tmp_path):
    db = tmp_path / "m.db"
    texts = [
        f"memo {i}: the {w} service handles {v}"
        for i, (w, v) in enumerate(
            [
                ("billing", "invoices"),
                ("auth", "logins"),
                ("search", "queries"),
                ("email", "newsletters"),
                ("billing", "refunds"),
                ("auth", "passwords"),
                ("upload", "images"),
                ("chat", "messages"),
            ]
            * 5
        )
    ]
    with Server(db) as srv:
        for t in texts:
            make_block(srv, t)
    results = {}
    for kind in ("memory", "sqlite"):
        with Server(db, env={"REOS_MEMORY_VECTOR_SEARCH": kind}) as srv:
            results[kind] = [
                [
                    (m["block_id"], m["score_breakdown"]["vector_similarity"])
                    for m in srv.call(
                        "memory/search",
                        {"query": q, "mode": "vector", "max_results": 10, "min_similarity": -1},
                    )["matches"]
                ]
                for q in ("billing refunds", "auth passwords", "chat")
            ]

    # vec0 gives L2 distances of the float32 vectors, the memory index dot products of float16
    # codes: equal within ~2e-4, so near-ties may swap; the same blocks with the same similarity
    # is what must hold
    for mem, vec0 in zip(results["memory"], results["sqlite"], strict=True):
        assert dict(mem).keys() == dict(vec0).keys()
        for block_id, sim in mem:
            assert sim == pytest.approx(dict(vec0)[block_id], abs=5e-4)  # both rounded to 4 places


@pytest.mark.parametrize("kind", ["flat", "ivf"])
def test_in_memory_index_sees_other_processes_writes(db_path, kind):
    env = {"REOS_MEMORY_VECTOR_FLAT_MAX": "0"} if kind == "ivf" else {}
    with Server(db_path, env=env) as one, Server(db_path, env=env) as two:
        assert one.call("memory/stats")["embedder"]["vector_index"]["kind"] == "not_loaded"
        make_block(one, "warm up the index", id="w")
        assert ids(one.call("memory/search", {"query": "warm index", "mode": "vector"})) == ["w"]
        assert one.call("memory/stats")["embedder"]["vector_index"]["kind"] == kind
        make_block(two, "zebra crossing near the office", id="z")
        assert "z" in ids(one.call("memory/search", {"query": "zebra crossing", "mode": "vector"}))
        two.call("blocks/delete", {"block_id": "z"})
        assert "z" not in ids(
            one.call("memory/search", {"query": "zebra crossing", "mode": "vector"})
        )
        two.call("blocks/update", {"block_id": "w", "content": "giraffe"})
        top = one.call("memory/search", {"query": "giraffe", "mode": "vector"})["matches"][0]
        assert top["block_id"] == "w" and top["score_breakdown"]["vector_similarity"] > 0.99


def test_the_next_server_loads_the_saved_index_and_sees_later_writes(db_path):
    env = {"REOS_MEMORY_VECTOR_FLAT_MAX": "50", "REOS_MEMORY_VECTOR_SNAPSHOT_MIN": "60"}
    queries = ["owls at night", "fact 7", "tea kettles", "the harbor in winter"]
    with Server(db_path, env=env) as first:
        topics = ["owls", "tea", "harbor", "winter", "kettles", "night"]
        for i in range(120):
            make_block(first, f"fact {i} about {topics[i % 6]} and {topics[(i * 5) % 6]}")
        want = [ids(first.call("memory/search", {"query": q, "mode": "vector"})) for q in queries]
        status = first.call("memory/stats")["embedder"]["vector_index"]
        assert status["kind"] == "ivf" and status["loaded_from"] == "vectors"
    assert (db_path.parent / f"{db_path.name}.vectors.block").exists()
    with Server(db_path, env=env) as second:
        got = [ids(second.call("memory/search", {"query": q, "mode": "vector"})) for q in queries]
        assert got == want
        status = second.call("memory/stats")["embedder"]["vector_index"]
        assert status["loaded_from"] == "snapshot" and status["vectors"] == 120
        make_block(second, "a zebra crossing near the office", id="z")
    with Server(db_path, env=env) as third:  # the saved file plus the logged change since
        hits = ids(
            third.call("memory/search", {"query": "zebra crossing office", "mode": "vector"})
        )
        assert hits[0] == "z"
        assert third.call("memory/stats")["embedder"]["vector_index"]["loaded_from"] == "snapshot"


def test_forgetting_a_memory_removes_the_saved_memory_index(db_path, tmp_path):
    env = {"REOS_MEMORY_VECTOR_SNAPSHOT_MIN": "3"}
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    saved = db_path.parent / f"{db_path.name}.vectors.memory"
    with Server(db_path, env=env) as srv:
        ids = [
            srv.call(
                "squirrel/memories/add",
                {"project_root": str(root), "kind": "note", "text": f"fact {i} about kettles"},
            )["memory"]["id"]
            for i in range(5)
        ]
    with Server(db_path, env=env) as srv:  # its first search builds the index of 5 and saves it
        srv.call("squirrel/search", {"project_root": str(root), "query": "kettles"})
        assert saved.exists()
        srv.call("squirrel/memories/forget", {"memory_id": ids[0]})
        assert not saved.exists()  # its vector must not linger in the file
        hits = srv.call("squirrel/search", {"project_root": str(root), "query": "fact 0 kettles"})
        found = [m["id"] for m in hits["matches"]]
        assert found and ids[0] not in found


def test_model_change_reembeds_and_never_mixes(db_path):
    with Server(db_path) as srv:
        for i in range(5):
            make_block(srv, f"fact {i} about owls", id=f"f{i}")
        assert srv.call("memory/stats")["embedder"]["database_model_id"] == "reos-hash-v1-384"
    with Server(db_path, env={"REOS_MEMORY_HASH_DIMENSIONS": "256"}) as srv:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            stats = srv.call("memory/stats")
            if stats["embedder"]["status"] == "ready" and stats["unindexed_blocks"] == 0:
                break
            time.sleep(0.1)
        stats = srv.call("memory/stats")
        assert (
            stats["total_embeddings"] == 5
            and stats["embedder"]["database_model_id"] == "reos-hash-v1-256"
        )
        assert ids(srv.call("memory/search", {"query": "fact 3 owls", "mode": "vector"}))[0] == "f3"
    from reos_memory.store import Database

    conn = Database(str(db_path)).conn()
    rows = conn.execute(
        "SELECT DISTINCT embedding_model, length(embedding) FROM block_embeddings"
    ).fetchall()
    assert rows == [("reos-hash-v1-256", 1024)]


def test_two_models_on_one_file_never_mix(db_path):
    with Server(db_path) as old:
        make_block(old, "written under the 384 model", id="a")
        with Server(db_path, env={"REOS_MEMORY_HASH_DIMENSIONS": "128"}) as new:
            new.wait_ready()
            assert new.call("memory/stats")["embedder"]["database_model_id"] == "reos-hash-v1-128"
            make_block(old, "written by the old process after the switch", id="b")
            res = old.call("memory/search", {"query": "written", "max_results": 5})
            assert res["stats"]["semantic_available"] is False
            assert "reos-hash-v1-128" in res["stats"]["semantic_unavailable_reason"]
            assert set(ids(res)) == {"a", "b"}  # keyword search still answers
            rows = new.call("memory/stats")
            assert rows["embedder"]["database_model_id"] == "reos-hash-v1-128"
    from reos_memory.store import Database

    conn = Database(str(db_path)).conn()
    models = {r[0] for r in conn.execute("SELECT embedding_model FROM block_embeddings")}
    assert models <= {"reos-hash-v1-128"}


def test_common_keywords_are_pruned_to_the_postings_budget(db_path):
    with Server(db_path, env={"REOS_MEMORY_KEYWORD_POSTINGS_BUDGET": "100"}) as srv:
        for i in range(120):
            make_block(srv, f"common filler line {i}", index=False)
        make_block(srv, "a rare common word", id="rare", index=False)
        res = srv.call("memory/search", {"query": "rare common", "mode": "keyword"})
        assert res["stats"]["keyword_terms"] == ["rare"]
        assert res["stats"]["keyword_terms_dropped"] == ["common"]
        assert ids(res) == ["rare"]
        # words in no block are simply unused
        res = srv.call("memory/search", {"query": "xylophone rare", "mode": "keyword"})
        assert res["stats"]["keyword_terms"] == ["rare"]


def test_blocks_stored_without_a_model_are_indexed_when_one_arrives(db_path):
    with Server(db_path, embedder="none") as srv:
        for i in range(12):
            make_block(srv, f"offline note {i}")
        assert srv.call("memory/stats")["unindexed_blocks"] == 12
    with Server(db_path) as srv:
        deadline = time.monotonic() + 30
        while srv.call("memory/stats")["unindexed_blocks"] and time.monotonic() < deadline:
            time.sleep(0.1)
        assert srv.call("memory/stats")["total_embeddings"] == 12


def test_catch_up_is_not_stopped_by_empty_blocks(db_path):
    with Server(db_path, embedder="none") as srv:
        for _ in range(300):  # more empty blocks than one catch-up chunk
            srv.call("blocks/create", {"type": "divider", "act_id": "act-1"})
        make_block(srv, "the one block with text", id="text")
    with Server(db_path) as srv:
        deadline = time.monotonic() + 30
        while srv.call("memory/stats")["unindexed_blocks"] and time.monotonic() < deadline:
            time.sleep(0.1)
        stats = srv.call("memory/stats")
        assert stats["total_embeddings"] == 1 and stats["unindexed_blocks"] == 0


def test_ranking_details_found_in_review(server):
    # every score is explained exactly by its breakdown, none is capped; a block reached only
    # over an edge ranks below the direct hits it hangs off (the graph adds, never displaces)
    a = make_block(server, "nightly backup of the billing database", id="a1", act_id="ops")
    b = make_block(
        server, "nightly backup of the billing database to cold storage", id="b1", act_id="ops"
    )
    c = make_block(server, "the billing database backup runs nightly at two", id="c1", act_id="ops")
    tape = make_block(server, "Tapes are rotated by Dana on Fridays", id="t1", act_id="ops")
    link(server, b, a, "references")
    link(server, c, b, "references")
    link(server, a, tape, "references")
    res = server.call(
        "memory/search", {"query": "nightly backup of the billing database", "act_id": "ops"}
    )
    by = {m["block_id"]: m for m in res["matches"]}
    assert res["matches"][0]["block_id"] == a
    assert by[tape]["source"] == "graph" and by[tape]["relationship_chain"] == ["references"]
    assert all(by[tape]["score"] < by[x]["score"] for x in (a, b, c))
    assert by[b]["score_breakdown"]["neighbourhood"] > 0  # its neighbour a matches the query
    for m in by.values():
        bd = m["score_breakdown"]
        base = (bd["fusion"] or 0.0) + (bd["graph_weight"] or 0.0) * (bd["graph"] or 0.0)
        expected = base * bd["type_weight"] * bd["recency"]
        assert abs(m["score"] - round(expected, 4)) < 2e-4, (m["block_id"], bd)
    # a query of only spaces is a clear -32602
    for q in (" ", "\t\n  "):
        err = server.error("memory/search", {"query": q})
        assert err.code == -32602 and "query" in str(err.data or err.message)
    # a correction in another act does not demote this act's block when the search names it
    old = make_block(server, "The VPN endpoint is vpn.old.example", id="vpn-old", act_id="it")
    other = make_block(
        server,
        "Correction for the lab: the VPN endpoint is vpn.lab.example",
        id="vpn-lab",
        act_id="lab",
    )
    link(server, other, old, "corrects")
    scoped = server.call("memory/search", {"query": "VPN endpoint", "act_id": "it"})
    mine = next(m for m in scoped["matches"] if m["block_id"] == old)
    assert "superseded_by" not in mine and mine["score_breakdown"]["correction_penalty"] is None
    everywhere = server.call("memory/search", {"query": "VPN endpoint"})
    theirs = next(m for m in everywhere["matches"] if m["block_id"] == old)
    assert theirs["superseded_by"] == other


def test_time_in_the_query_favours_blocks_written_then(server):
    for bid, when in (
        ("mar", "2023-03-14T10:00:00Z"),
        ("may", "2023-05-09T10:00:00Z"),
        ("jul", "2023-07-20T10:00:00Z"),
    ):
        server.call(
            "blocks/create",
            {
                "type": "paragraph",
                "act_id": "team",
                "id": bid,
                "created_at": when,
                "content": f"We decided to move the launch of the mobile app ({bid} review)",
            },
        )
    plain = server.call(
        "memory/search", {"query": "decision about the launch of the mobile app", "act_id": "team"}
    )
    assert all(m["score_breakdown"]["time_match"] is None for m in plain["matches"])
    res = server.call(
        "memory/search",
        {
            "query": "what did we decide about the launch of the mobile app in May 2023?",
            "act_id": "team",
        },
    )
    top = res["matches"][0]
    assert top["block_id"] == "may" and top["score_breakdown"]["time_match"] == 1.5
    assert {m["block_id"] for m in res["matches"]} == {"mar", "may", "jul"}  # nothing dropped
    before = server.call(
        "memory/search",
        {"query": "the launch of the mobile app before April 2023", "act_id": "team"},
    )
    assert before["matches"][0]["block_id"] == "mar"


def test_a_word_searched_before_any_block_had_it_is_found_once_written(server):
    # document frequencies are remembered for pruning, but never a word that was in no block
    assert ids(server.call("memory/search", {"query": "quokka", "mode": "keyword"})) == []
    make_block(server, "a quokka visited the office", id="q", index=False)
    assert ids(server.call("memory/search", {"query": "quokka", "mode": "keyword"})) == ["q"]


def test_a_block_whose_text_is_cleared_loses_its_vector(db_path):
    with Server(db_path, env=NO_CATCH_UP) as srv:
        make_block(srv, "the giraffe sleeps standing up", id="g")
        make_block(srv, "zebras have stripes", id="z")
        assert srv.call("memory/stats")["total_embeddings"] == 2
        srv.call("blocks/update", {"block_id": "g", "content": ""})
        found = srv.call(
            "memory/search", {"query": "giraffe sleeps", "mode": "vector", "min_similarity": -1}
        )
        assert ids(found) == ["z"]
        stats = srv.call("memory/stats")
        assert stats["total_embeddings"] == 1 and stats["unindexed_blocks"] == 0


def test_blank_text_needs_no_vector_by_one_rule_everywhere(db_path):
    with Server(db_path, env=NO_CATCH_UP) as srv:
        make_block(srv, "  \n\t ", id="blank", index=False)
        make_block(srv, "some text", id="t", index=False)
        assert srv.call("memory/stats")["unindexed_blocks"] == 1  # the blank one needs none
        done = srv.call("memory/index/batch", {})
        assert (done["indexed"], done["total"]) == (1, 1)
        assert srv.call("memory/stats")["unindexed_blocks"] == 0


def test_graph_spreads_relevance_and_second_hop_follows_the_first_hits(server):
    # the second hop searches the distinctive words of the best first-hop hits: a block that
    # shares none of the query's words but one of the hits' rarer words joins the results
    lead = make_block(server, "The team lead enjoys kayaking on weekends", id="lead", act_id="t")
    trip = make_block(server, "Booked the kayaking trip to the glacier lake", id="trip", act_id="t")
    for n in range(6):
        make_block(server, f"Sprint note {n}: tickets moved to review", id=f"n{n}", act_id="t")
    reply = make_block(server, "Sounds fun, send photos", id="reply", act_id="t")
    link(server, reply, lead, "follows_from")
    res = server.call(
        "memory/search", {"query": "what does the team lead do for fun?", "act_id": "t"}
    )
    by = {m["block_id"]: m for m in res["matches"]}
    assert "kayaking" in res["stats"]["second_hop_terms"]
    assert by[trip]["score_breakdown"]["second_hop_rank"] in (1, 2)  # with "lead"
    # relevance spreads both ways over the edge: the reply gets a share of its turn's score
    bd = by[reply]["score_breakdown"]
    assert bd["graph"] > 0 and bd["graph_weight"] == 0.15
    assert by[reply]["relationship_chain"] in (["follows_from"], ["follows_from (incoming)"])
    plain = server.call(
        "memory/search",
        {"query": "what does the team lead do for fun?", "act_id": "t", "include_graph": False},
    )
    assert plain["stats"].get("second_hop_terms", []) == []
    assert all(m["score_breakdown"]["second_hop_rank"] is None for m in plain["matches"])
    assert all(m["score_breakdown"]["graph_weight"] is None for m in plain["matches"])
