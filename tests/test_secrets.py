"""Secrets on the external-style corpus (harness/secret_formats.py), across events, in linear time,
through every way text comes in: events, session logs, memories, blocks with redact_blocks."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from harness import secret_formats
from harness.rpc_client import Server
from harness.secret_formats import ALL_KINDS, LOOKALIKES, cases, fullwidth
from reos_memory.squirrel.redaction import (
    SecretScope,
    find_secrets,
    redact,
    redact_events,
    redact_folded,
)
from reos_memory.squirrel.redaction.values import fake_token

CASES = cases()
CASE_IDS = [f"{i:04d}-{c.kind}-{c.context}" for i, c in enumerate(CASES)]


def test_the_corpus_is_external_style_and_large():
    assert len(ALL_KINDS) >= 110
    assert len({c.kind for c in CASES}) >= 130
    assert len(CASES) >= 1400
    contexts = {c.context for c in CASES}
    assert {"chat", "stack_trace", "env_line", "export", "cli_flag", "url_query", "split",
            "fullwidth", "zero_width", "yaml_config", "json_config"} <= contexts  # fmt: skip
    assert len(LOOKALIKES) >= 50


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_every_corpus_secret_is_redacted_across_its_events(case):
    out = "\n".join(redact_events(case.messages))
    assert [n for n in case.needles if len(n) >= 8 and n in out] == [], out


@pytest.mark.parametrize(("text", "keep"), LOOKALIKES, ids=[k[:40] for _t, k in LOOKALIKES])
def test_lookalikes_survive(text, keep):
    assert keep in redact(text)


@pytest.mark.parametrize(
    "text",
    [
        "mise run test:integration",
        "decoder.DisallowUnknownFields()",
        "root := paths.RepoRoot()",
        "AbstractSingletonProxyFactoryBeanConfigurationProviderRegistryImpl",
        "see /home/dev/projects/reos/internal/checkout/worktree_common_dir_test.go",
        "https://pkg.go.dev/github.com/go-git/go-git/v5/plumbing/format/gitignore",
        "sessionId: 3f2b8c1e-9d4a-4f6b-8e2a-1c7d9b0e5f3a",
        "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
        "API_KEY={{ .Values.apiKey }}",
    ],
)
def test_ordinary_developer_text_is_not_touched(text):
    assert redact(text) == text


def test_full_width_and_zero_width_keys_are_found_and_the_rest_keeps_its_characters():
    key = "sk-or-v1-" + "0a1b2c3d4e5f6a7b" * 4
    wide = fullwidth(key)
    out = redact(f"«clé» {wide} — fin")
    assert out == "«clé» [REDACTED:openrouter_key] — fin"
    out = redact(f"try {key[:20]}\u200b{key[20:]} now")
    assert out == "try [REDACTED:openrouter_key] now"


def test_a_value_redacted_once_is_redacted_everywhere_in_the_session():
    pw = "Tr0ub4dor-be3nNyjOq9"
    first = f"psql postgres://app:{pw}@db.internal:5432/app"
    second = f"no, don't put {pw} in the Makefile"
    assert pw in redact(second)  # no rule sees it alone
    out = redact_events([second, first])
    assert all(pw not in t for t in out), out
    assert out[0] == "no, don't put [REDACTED:url_password] in the Makefile"


def test_a_key_split_over_two_messages_is_found_across_their_seam():
    key = "sntryu_" + "9f8e7d6c5b4a3928" * 4
    a, b = key[:30], key[30:]
    out = redact_events([f"here is the token {a}", f"{b}", "thanks"])
    assert a not in out[0] and b not in out[1], out
    assert out[2] == "thanks"


def test_the_seam_does_not_join_an_id_and_the_word_that_opens_the_next_event():
    texts = [
        "request_id req_011CY15QS2LGwAeBxdfa6e1V",
        "message msg_01MKH1ccEGrZGNPvu8pYiiQa arrived",
    ]
    assert redact_events(texts) == texts


def test_the_seam_does_not_join_ordinary_messages():
    out = redact_events(["see the file", "README.md and docs/setup_guide_for_contributors.md"])
    assert out == ["see the file", "README.md and docs/setup_guide_for_contributors.md"]


def test_a_scope_keeps_values_between_calls():
    scope = SecretScope()
    scope.redact("export DB_PASSWORD=Zq7-hunter-99x")
    assert scope.redact("it is Zq7-hunter-99x again") == "it is [REDACTED:password] again"


# -- time: linear in the input, judged by how time grows with size (no time limit) -----------

# (the shapes whose time once grew faster than their length, and the command lines read from
# a tool's word, each a finding every few characters)
CRAFTED: dict[str, Callable[[int], str]] = {
    name: secret_formats.CRAFTED[name]
    for name in (
        "token: repeated",
        "API_KEY=y repeated",
        "pass=... repeated",
        "export X_TOKEN=",
        "secret words",
        "base64 run",
        "zero width",
        "-a redis-cli repeated",
        "distinct passwords",
        "echo | secret put",
        "htpasswd -b",
        "-U user%",
        "net user u p1",
        "zip -rP p1",
        "poetry http-basic",
        "SET PASSWORD FOR",
        "SET PASSWORD FOR, no =",
        "password: !!str p1",
        "sops values",
    )
}


def _cpu(fn: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(3):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return max(best, 1e-4)


@pytest.mark.parametrize("shape", list(CRAFTED))
def test_redaction_time_grows_linearly_on_crafted_lines(shape):
    make = CRAFTED[shape]
    small, large = make(8_000), make(64_000)  # 8 times the input
    redact(small)  # warm caches
    ratio = _cpu(lambda: redact(large)) / _cpu(lambda: redact(small))
    # linear: about 8; quadratic: about 64 (it was, for the first four shapes)
    assert ratio < 24, f"{shape}: 8x the input took {ratio:.1f}x the time"


def test_find_secrets_offsets_point_into_the_original_text():
    key = "hf_" + "Qm7TzKp2WvX9rLd4BnYc8HsJf3GaUe6NkR"
    text = f"{fullwidth('x')} {key[:10]}\u200b{key[10:]} {fullwidth('y')}"
    ((kind, s, e),) = find_secrets(text)
    assert kind == "huggingface_token" and text[s:e].replace("\u200b", "") == key


# -- every way in, over stdio -----------------------------------------------------------------


def _db_text(db: Path) -> str:
    blob = b"".join(p.read_bytes() for p in (db, Path(f"{db}-wal")) if p.exists())
    return blob.decode("utf-8", "replace")


@pytest.mark.e2e
def test_values_seen_in_one_ingest_are_redacted_in_a_later_one_and_in_memories(tmp_path):
    pw = "Tr0ub4dor-be3nNyjOq9"
    db = tmp_path / "m.db"
    proj = tmp_path / "proj"
    proj.mkdir()
    with Server(db) as srv:
        base = {"project_root": str(proj), "session_id": "s-1"}
        srv.call("squirrel/ingest", {**base, "events": [
            {"role": "user", "kind": "message", "text": "set up the database connection"},
            {"role": "assistant", "kind": "tool_call", "tool_name": "Bash", "call_id": "c1",
             "command": f"psql postgres://app:{pw}@db.internal:5432/app -c 'select 1'"},
            {"role": "tool", "kind": "tool_result", "call_id": "c1", "exit_code": 0,
             "text": "1 row"},
        ]})  # fmt: skip
        srv.call("squirrel/ingest", {**base, "session_end": True, "events": [
            {"role": "user", "kind": "message",
             "text": f"no, don't put {pw} in the Makefile, always read it from the environment"},
        ]})  # fmt: skip
        eps = srv.call("squirrel/episodes/list", {"project_root": str(proj)})["episodes"]
        got = [srv.call("squirrel/episodes/get", {"episode_id": e["id"]}) for e in eps]
        mems = srv.call("squirrel/memories/list", {"project_root": str(proj)})["memories"]
    assert pw not in json.dumps(got) and pw not in json.dumps(mems)
    assert pw not in _db_text(db)
    assert "[REDACTED:url_password] in the Makefile" in json.dumps(got)


@pytest.mark.e2e
def test_memory_text_is_redacted_on_add_and_update(tmp_path):
    key = "dapi" + "7c3e9a1f05bd4286e1f9a7c30d5b8e42"
    m, upd, db = _add_then_update(
        tmp_path,
        f"the Databricks token is {key}",
        f"use {fullwidth('dapi')}{key[4:]} for the jobs API",
    )
    assert key not in m["text"] and "[REDACTED:databricks_token]" in m["text"]
    assert "[REDACTED:databricks_token]" in upd["text"]
    assert key not in _db_text(db) and key[4:] not in _db_text(db)


def _add_then_update(tmp_path: Path, text: str, new_text: str) -> tuple[dict, dict, Path]:
    """A memory added over stdio with `text`, then updated to `new_text`: both as returned, and
    the database file."""
    db = tmp_path / "m.db"
    proj = tmp_path / "proj"
    proj.mkdir()
    with Server(db) as srv:
        m = srv.call(
            "squirrel/memories/add", {"project_root": str(proj), "kind": "note", "text": text}
        )["memory"]
        upd = srv.call("squirrel/memories/update", {"memory_id": m["id"], "text": new_text})
    return m, upd["memory"], db


def test_a_memory_is_redacted_before_its_lines_are_folded(tmp_path):
    """A value on its own line (an XML element's, a Kubernetes Secret's data) is found in the
    form it was written in; the memory's text is then folded to one line."""
    token = "hT6kP9xQ2mW8rL4vZ3nB"
    data = "c3VwZXItc2VjcmV0LXBhc3N3b3Jk"  # base64 of a password
    manifest = f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n  conn: {data}\n"
    m, upd, db = _add_then_update(
        tmp_path,
        f"settings.xml holds\n<apiToken>\n    {token}\n</apiToken>",
        f"the db Secret:\n{manifest}",
    )
    assert m["text"] == "settings.xml holds <apiToken> [REDACTED:env_secret] </apiToken>"
    # and once folded: a value on the line after its name reads as its value
    assert redact_folded("password:\n  w67gR@5asJGqHA") == "password: [REDACTED:password]"
    assert "conn: [REDACTED:kubernetes_secret]" in upd["text"] and "\n" not in upd["text"]
    assert token not in _db_text(db) and data not in _db_text(db)


@pytest.mark.e2e
@pytest.mark.parametrize("on", [False, True])
def test_blocks_store_what_the_client_sends_unless_redact_blocks_is_on(tmp_path, on):
    key = "sk-or-v1-" + "0a1b2c3d4e5f6a7b" * 4
    db = tmp_path / "m.db"
    env = {"REOS_MEMORY_REDACT_BLOCKS": "true" if on else "false"}
    with Server(db, env=env) as srv:
        b = srv.call(
            "blocks/create",
            {
                "type": "paragraph",
                "act_id": "a",
                "content": f"OpenRouter key {key}",
                "properties": {"api_key": key},
            },
        )
        u = srv.call(
            "blocks/update",
            {
                "block_id": b["block"]["id"],
                "rich_text": [{"content": f"still {key}", "bold": True}],
            },
        )
    if on:
        assert key not in json.dumps([b, u])
        assert b["block"]["content"] == "OpenRouter key [REDACTED:openrouter_key]"
        assert b["block"]["properties"]["api_key"].startswith("[REDACTED:")
        assert u["block"]["rich_text"] == [
            {"content": "still [REDACTED:openrouter_key]", "bold": True}
        ]
        assert key not in _db_text(db)
    else:
        assert b["block"]["content"] == f"OpenRouter key {key}"
        assert u["block"]["content"] == f"still {key}"


def test_a_documented_example_value_stays_but_a_block_holding_the_word_does_not():
    # AWS's documented example key is no credential; a private key block (or any finding with
    # blanks in it) that happens to hold "EXAMPLE" is still one
    assert (
        redact("AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE") == "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE"
    )
    block = (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAxEXAMPLEq8w2e4r6t8y0u2i4o6p8a0s2d4f6g8h0j2k4"
        "\n-----END RSA PRIVATE KEY-----"
    )
    assert "q8w2e4r6t8y0u2i4" not in redact(block)


_SECRET_DOC = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ntype: Opaque\n"


@pytest.mark.parametrize(
    ("text", "gone", "kept"),
    [
        # any key of a Secret's data, comments skipped, the map ending at its own depth
        (
            _SECRET_DOC + "data:\n  # base64\n  extra: YWRtaW46c2VjcmV0cGFzcw==\nimmutable: true\n",
            ["YWRtaW46c2VjcmV0cGFzcw=="],
            ["immutable: true", "name: db"],
        ),
        (_SECRET_DOC + "stringData:\n  dsn: pg-Xk29fPq7\n", ["pg-Xk29fPq7"], []),
        # kubectl's JSON
        (
            '{"kind": "Secret", "data": {"tls.key": "LS0tLS1CRUdJTiBQUklW"}, "type": "Opaque"}',
            ["LS0tLS1CRUdJTiBQUklW"],
            ['"type": "Opaque"'],
        ),
        # a ConfigMap's data, a short base64 value, a reference, another document's data
        ("kind: ConfigMap\ndata:\n  LOG_LEVEL: debug-verbose-1\n", [], ["debug-verbose-1"]),
        (_SECRET_DOC + "data:\n  flag: YmFyCg==\n", [], ["YmFyCg=="]),
        (_SECRET_DOC + "stringData:\n  password: ${DB_PASSWORD}\n", [], ["${DB_PASSWORD}"]),
        (
            _SECRET_DOC + "---\nkind: ConfigMap\ndata:\n  mode: c3RyaWN0LW1vZGUtb24=\n",
            [],
            ["c3RyaWN0LW1vZGUtb24="],
        ),
    ],
)
def test_a_kubernetes_secrets_data_is_redacted_whatever_its_keys(text, gone, kept):
    out = redact(text)
    assert not [g for g in gone if g in out], out
    assert all(k in out for k in kept), out


@pytest.mark.parametrize(
    "stand_in",
    [
        "gsk_" + "x" * 52,
        "AKIAXXXXXXXXXXXXXXXX",
        "sk_live_abcdefghijklmnopqrstuvwxyz0123",
        "re_1234abcd_aBcDeFgHiJkLmNoPqRsTuVwX",
        "hf_requiredCharacteristicTypesForDisplay",
        "s.writeFinalTaskCheckpoint",
        "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    ],
)
def test_a_token_a_person_typed_in_its_place_is_a_stand_in(stand_in):
    assert fake_token(stand_in)


def test_no_generated_token_reads_as_a_stand_in():
    """Masks, sequences and camelCase words: a machine-made token of any kind in the corpus is
    none of them (100 values of each)."""
    import random

    rng = random.Random(5)
    found = [v for k in ALL_KINDS for v in (k.gen(rng) for _ in range(100)) if fake_token(v)]
    assert not found


def test_outside_fixtures_are_measured_from_a_file_kept_elsewhere(tmp_path, capsys):
    """`tools/eval_secrets.py --fixtures FILE`: a reviewer's or a scanner's own cases, read from
    outside the project; a true positive missed when a piece of its secret survives, a false
    positive when it is changed."""
    from tools.eval_secrets import main

    token = "ghp_" + "Qm7TzKp2WvX9rLd4BnYc8HsJf3GaUe6NkR12"
    cases = [
        {"text": f"export GITHUB_TOKEN={token}", "kind": "tp", "secret": token, "label": "gh"},
        {"text": "the build id is b7c1e09 for tag v2", "kind": "tp", "label": "made-up"},
        {"text": "key = AKIAXXXXXXXXXXXXXXXX", "kind": "fp", "label": "aws"},
        {"text": "DB_PASSWORD=hunter2hunter2", "kind": "fp", "label": "pw"},
    ]
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(json.dumps(c) for c in cases) + "\n")
    assert main(["--fixtures", str(path)]) == 0
    out = capsys.readouterr().out
    assert "true positives missed 0/2" in out  # (the second holds no 16-character run)
    assert "false positives changed 1/2" in out and "pw: missed 0/0, changed 1/1" in out
