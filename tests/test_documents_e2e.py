"""documents/* over real stdio, with a real file of every supported format."""

from __future__ import annotations

import base64
import time

import pytest

from harness.documents_fixtures import make_csv, make_docx, make_md, make_pdf, make_txt, make_xlsx
from harness.rpc_client import Server
from tests.conftest import cancel_at_commit

pytestmark = pytest.mark.e2e

LONG_PAGE = " ".join(
    f"Paragraph sentence {i} about quarterly planning and budget reviews." for i in range(60)
)


def top(srv, query, **kw):
    return srv.call("memory/search", {"query": query, "max_results": 5, **kw})


def test_every_format_is_searchable_and_cited(server, tmp_path):
    pdf = make_pdf(
        tmp_path / "handbook.pdf",
        ["Welcome to the company handbook.", "Expense reports are due on the fifth of each month."],
    )
    files = [
        pdf,
        make_docx(tmp_path / "eng.docx"),
        make_xlsx(tmp_path / "office.xlsx"),
        make_csv(tmp_path / "offices.csv"),
        make_md(tmp_path / "runbook.md"),
        make_txt(tmp_path / "notes.txt"),
    ]
    for f in files:
        res = server.call("documents/insert", {"path": str(f), "act_id": "act-1"})
        assert res["chunks"] >= 1 and res["indexed"] == res["chunks"] and not res["replaced"]
        assert res["document"]["filename"] == f.name and res["document"]["format"] == f.suffix[1:]
    listed = server.call("documents/list", {"act_id": "act-1"})
    assert listed["count"] == 6
    assert next(d for d in listed["documents"] if d["format"] == "pdf")["pages"] == 2
    hit = top(server, "when are expense reports due")["matches"][0]
    assert hit["block_type"] == "document_chunk"
    props = hit["properties"]
    assert props["source_document_name"] == "handbook.pdf" and props["page_number"] == 2
    assert props["chunk_index"] == 1 and props["total_chunks"] == 2
    md = top(server, "when are expense reports due")["markdown"]
    assert "Source: handbook.pdf (page 2)" in md
    docx_hit = top(server, "which day are production deploys")["matches"][0]
    assert docx_hit["properties"]["section_title"] == "Deployments"
    assert (
        top(server, "who owns the billing service")["matches"][0]["properties"][
            "source_document_name"
        ]
        == "eng.docx"
    )
    xl = top(server, "how many standing desks")["matches"][0]
    assert xl["properties"]["section_title"] == "Inventory" and "standing desk" in xl["content"]
    assert "office_manager: Henrik" in top(server, "Oslo office manager")["matches"][0]["content"]
    assert (
        top(server, "page the on-call SRE")["matches"][0]["properties"]["section_title"]
        == "Escalation"
    )
    assert (
        top(server, "guest wifi password")["matches"][0]["properties"]["source_document_name"]
        == "notes.txt"
    )


def test_long_document_chunks_with_overlap(server, tmp_path):
    pdf = make_pdf(tmp_path / "plan.pdf", [LONG_PAGE, LONG_PAGE])
    res = server.call(
        "documents/insert",
        {"path": str(pdf), "act_id": "a", "chunk_tokens": 200, "overlap_tokens": 30},
    )
    chunks = server.call("blocks/list", {"type": "document_chunk", "limit": 1000})["blocks"]
    assert len(chunks) == res["chunks"] > 4
    assert all(c["properties"]["total_chunks"] == len(chunks) for c in chunks)
    assert [c["properties"]["chunk_index"] for c in chunks] == list(range(len(chunks)))
    first, second = chunks[0]["content"].split(), chunks[1]["content"].split()
    # the overlap carries the last words of one chunk to the start of the next
    assert any(first[-k:] == second[:k] for k in range(5, 31))
    assert {c["properties"]["page_number"] for c in chunks} == {1, 2}


def test_reinsert_replaces_and_delete_removes_everything(server, tmp_path):
    path = make_txt(tmp_path / "notes.txt")
    first = server.call("documents/insert", {"path": str(path), "act_id": "a"})
    same = server.call("documents/insert", {"path": str(path), "act_id": "a"})
    assert same["unchanged"] and same["document"]["id"] == first["document"]["id"]
    path.write_text("Completely new text about the parking garage.\n\nSecond paragraph.")
    again = server.call("documents/insert", {"path": str(path), "act_id": "a"})
    assert again["replaced"] and again["document"]["id"] == first["document"]["id"]
    stats = server.call("memory/stats")
    assert stats["total_blocks"] == again["chunks"] and stats["total_embeddings"] == again["chunks"]
    assert top(server, "wifi password fridge")["matches"] == [] or all(
        "fridge" not in m["content"] for m in top(server, "wifi password fridge")["matches"]
    )
    # the same file under another act is another document
    other = server.call("documents/insert", {"path": str(path), "act_id": "b"})
    assert other["document"]["id"] != first["document"]["id"]
    chunk = server.call("blocks/list", {"act_id": "a", "type": "document_chunk"})["blocks"][0]["id"]
    note = server.call(
        "blocks/create", {"type": "paragraph", "act_id": "a", "content": "see the parking doc"}
    )["block"]["id"]
    server.call(
        "memory/relationships/create",
        {"source_id": note, "target_id": chunk, "rel_type": "references"},
    )
    res = server.call("documents/delete", {"document_id": first["document"]["id"]})
    assert res["deleted"] and res["chunks_removed"] == again["chunks"]
    stats = server.call("memory/stats", {"act_id": "a"})
    assert stats["blocks_by_type"] == {"paragraph": 1} and stats["total_relationships"] == 0
    assert server.call("documents/list", {"act_id": "a"})["count"] == 0
    assert (
        server.call("documents/delete", {"document_id": first["document"]["id"]})["deleted"]
        is False
    )


def test_base64_input(server, tmp_path):
    data = base64.b64encode(make_md(tmp_path / "r.md").read_bytes()).decode()
    res = server.call("documents/insert", {"data": data, "filename": "runbook.md", "act_id": "a"})
    assert res["document"]["source_path"] is None and res["chunks"] == 2
    err = server.error(
        "documents/insert", {"data": "@@not base64@@", "filename": "x.md", "act_id": "a"}
    )
    assert err.code == -32602 and err.data["field"] == "$.data"
    err = server.error("documents/insert", {"data": data, "act_id": "a"})
    assert err.code == -32602 and err.data["field"] == "$.filename"
    err = server.error(
        "documents/insert", {"data": data, "filename": "r.md", "path": "/x", "act_id": "a"}
    )
    assert err.code == -32602
    err = server.error("documents/insert", {"path": str(tmp_path / "missing.pdf"), "act_id": "a"})
    assert err.code == -32004 and err.data["field"] == "$.path"


def test_bad_files_store_nothing(server, tmp_path):
    before = server.call("memory/stats")
    cases = {
        "corrupt": tmp_path / "broken.pdf",
        "encrypted": make_pdf(tmp_path / "secret.pdf", ["top secret"], encrypt_with="hunter2"),
        "empty": tmp_path / "empty.txt",
        "unsupported": tmp_path / "tool.exe",
    }
    cases["corrupt"].write_bytes(b"%PDF-1.7\n" + bytes(range(256)) * 20)
    cases["empty"].write_bytes(b"")
    cases["unsupported"].write_bytes(b"MZ\x90\x00")
    (tmp_path / "fake.docx").write_bytes(b"this is not a zip")
    (tmp_path / "fake.xlsx").write_bytes(b"PK\x03\x04 truncated")
    cases["corrupt docx"] = tmp_path / "fake.docx"
    cases["corrupt xlsx"] = tmp_path / "fake.xlsx"
    cases["no text"] = make_pdf(tmp_path / "scan.pdf", ["", ""])
    for expected, path in cases.items():
        err = server.error("documents/insert", {"path": str(path), "act_id": "a"})
        assert err.code == -32012, (expected, err.error)
        assert err.data["kind"] == expected.split()[0].replace("no", "empty"), (expected, err.error)
        assert path.name in err.error["message"], (expected, err.error)
    after = server.call("memory/stats")
    assert (
        after["total_blocks"] == before["total_blocks"]
        and server.call("documents/list")["count"] == 0
    )


def test_progress_and_cancel_write_nothing(db_path, tmp_path):
    pdf = make_pdf(tmp_path / "big.pdf", [LONG_PAGE] * 12)
    with Server(db_path) as srv:
        srv.call("ping")
        srv.call("memory/stats")
        resp, prog = cancel_at_commit(
            srv,
            db_path,
            "documents/insert",
            {"path": str(pdf), "act_id": "a", "progress_token": "doc"},
            lambda p: p["message"] == "embedding chunks" and p["done"] == p["total"],
        )
        assert any(p["message"] == "reading pages" and p["total"] == 12 for p in prog)
        assert resp["error"]["code"] == -32008
        assert (
            srv.call("memory/stats")["total_blocks"] == 0
            and srv.call("documents/list")["count"] == 0
        )
        done = srv.call("documents/insert", {"path": str(pdf), "act_id": "a"})
        assert done["chunks"] > 0


def _long_text(path):
    paragraphs = [
        f"Paragraph {i}: the warehouse in district {i} stores pallets of item {i * 7} and ships"
        f" them every {i % 5 + 1} days to the northern depot, after checking the inventory."
        for i in range(60)
    ]
    path.write_text("\n\n".join(paragraphs))
    return path


def test_reinsert_with_other_chunking_cuts_the_file_again(server, tmp_path):
    path = _long_text(tmp_path / "warehouse.txt")
    first = server.call("documents/insert", {"path": str(path), "act_id": "a"})
    finer = {"path": str(path), "act_id": "a", "chunk_tokens": 100, "overlap_tokens": 10}
    again = server.call("documents/insert", finer)
    assert not again["unchanged"] and again["replaced"] and again["chunks"] > first["chunks"]
    assert again["document"]["id"] == first["document"]["id"]
    chunks = server.call("blocks/list", {"act_id": "a", "type": "document_chunk"})["blocks"]
    assert len(chunks) == again["chunks"]
    assert server.call("documents/insert", finer)["unchanged"]


def test_two_inserts_of_the_same_new_file_at_once_end_in_one_document(db_path, tmp_path):
    import apsw

    path = _long_text(tmp_path / "warehouse.txt")
    with Server(db_path) as srv:
        srv.wait_ready()
        lock = apsw.Connection(str(db_path))
        lock.execute("PRAGMA busy_timeout = 10000")
        lock.execute("BEGIN IMMEDIATE")  # both read "no such document" and wait at their commit
        try:
            ids = [
                srv.request("documents/insert", {"path": str(path), "act_id": "a"})
                for _ in range(2)
            ]
            time.sleep(1.5)
        finally:
            lock.execute("ROLLBACK")
            lock.close()
        replies = [srv.response(i) for i in ids]
        assert all("result" in r for r in replies), replies
        assert sorted(r["result"]["replaced"] for r in replies) == [False, True]
        docs = srv.call("documents/list", {"act_id": "a"})
        assert docs["count"] == 1
        chunks = srv.call("blocks/list", {"act_id": "a", "type": "document_chunk"})["blocks"]
        assert len(chunks) == docs["documents"][0]["chunk_count"]


def test_links_devices_and_pipes_are_refused_unless_links_are_allowed(db_path, tmp_path):
    import os

    from harness.documents_fixtures import make_txt

    real = make_txt(tmp_path / "notes.txt")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    with Server(db_path) as srv:
        err = srv.error("documents/insert", {"path": str(link), "act_id": "a"})
        assert err.code == -32602 and "symbolic link" in str(err)
        assert err.data["field"] == "$.path"
        for special in (fifo, "/dev/zero", tmp_path):  # a pipe, a device, a directory
            err = srv.error("documents/insert", {"path": str(special), "act_id": "a"})
            assert err.code == -32602 and "regular file" in str(err)
        assert srv.call("documents/list", {})["count"] == 0
    with Server(db_path, env={"REOS_MEMORY_DOCUMENTS_FOLLOW_SYMLINKS": "true"}) as srv:
        done = srv.call("documents/insert", {"path": str(link), "act_id": "a"})
        assert done["chunks"] == 1 and done["document"]["source_path"] == str(real.resolve())
