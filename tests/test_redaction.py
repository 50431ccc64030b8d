"""Secret redaction (reos_memory.squirrel.redaction) over the fake-secret corpus; no server."""

from __future__ import annotations

import json

import pytest

from harness.secret_corpus import BENIGN, SECRETS
from reos_memory.models import EventIn
from reos_memory.squirrel.events import compress
from reos_memory.squirrel.redaction import find_secrets, redact, redact_value
from reos_memory.squirrel.text.prose import typed_quotes

SECRET_IDS = [f"{i:02d}-{kind}" for i, (_t, _s, kind) in enumerate(SECRETS)]
BENIGN_IDS = [f"{i:02d}" for i in range(len(BENIGN))]


def test_corpus_is_big_and_varied_enough():
    assert len(SECRETS) >= 45
    assert len(BENIGN) >= 30
    assert len({kind for _t, _s, kind in SECRETS}) >= 15
    for text, secrets, _kind in SECRETS:
        assert len(text) < 700
        assert secrets and all(s in text for s in secrets)
    for text, keep in BENIGN:
        assert len(text) < 700
        assert keep and all(k in text for k in keep)


@pytest.mark.parametrize(("text", "secrets", "kind"), SECRETS, ids=SECRET_IDS)
def test_every_secret_is_removed_and_the_placeholder_names_its_kind(text, secrets, kind):
    out = redact(text)
    assert [s for s in secrets if s in out] == []
    assert f"[REDACTED:{kind}]" in out


@pytest.mark.parametrize(("text", "secrets", "kind"), SECRETS, ids=SECRET_IDS)
def test_secrets_are_removed_when_whitespace_was_collapsed_first(text, secrets, kind):
    # commit.py and service.py collapse whitespace before redacting, so line structure is gone.
    out = redact(" ".join(text.split()))
    assert [s for s in secrets if s in out] == []


@pytest.mark.parametrize(("text", "secrets", "kind"), SECRETS, ids=SECRET_IDS)
def test_error_lines_taken_from_failing_output_hold_no_secret(text, secrets, kind):
    # the error line is read from the whole output and may be kept as it was read: every way
    # an error can wrap a secret leaves none in the stored event
    outputs = [
        f"<tool_use_error>{text}</tool_use_error>",
        f"Traceback (most recent call last):\nRuntimeError: {text}\n",
        f"Error: {' '.join(text.split())}\n",
        f"fatal: {' '.join(text.split())}\n",
    ]
    for output in outputs:
        ev = EventIn(role="tool", kind="tool_result", text=output, is_error=True)
        stored = json.dumps(compress(ev, 0, {"tool_name": "Bash", "command": "make deploy"}))
        assert [s for s in secrets if s in stored] == [], output


def test_an_error_line_is_kept_as_read_when_its_line_holds_no_secret():
    out = "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>"
    ev = EventIn(role="tool", kind="tool_result", text=out, is_error=True)
    c = compress(ev, 0, {"tool_name": "Edit", "file": "/src/app/page.tsx"})
    assert c["error_line"] == "File has not been read yet. Read it first before writing to it."


@pytest.mark.parametrize(("text", "secrets", "kind"), SECRETS, ids=SECRET_IDS)
def test_redact_value_removes_secrets_inside_json_like_data(text, secrets, kind):
    data = {
        "event": {"kind": "tool_result", "text": text, "args": {"command": text}},
        "history": [("user", text), {"nested": [text]}],
        "count": 3,
        "ok": True,
        "missing": None,
    }
    out = redact_value(data)
    dumped = json.dumps(out)
    assert [s for s in secrets if s in dumped] == []
    assert out["count"] == 3 and out["ok"] is True and out["missing"] is None
    assert set(out) == set(data) and set(out["event"]) == set(data["event"])
    assert isinstance(out["history"][0], tuple)


@pytest.mark.parametrize(("text", "keep"), BENIGN, ids=BENIGN_IDS)
def test_benign_text_survives(text, keep):
    out = redact(text)
    assert [k for k in keep if k not in out] == [], find_secrets(text)


@pytest.mark.parametrize(("text", "keep"), BENIGN, ids=BENIGN_IDS)
def test_benign_text_survives_redact_value(text, keep):
    out = redact_value({"text": text, "items": [text]})
    assert out == {"text": text, "items": [text]}


@pytest.mark.parametrize(
    "text", [t for t, _s, _k in SECRETS] + [t for t, _k in BENIGN], ids=SECRET_IDS + BENIGN_IDS
)
def test_redaction_is_idempotent(text):
    once = redact(text)
    assert redact(once) == once
    assert redact_value(redact_value({"t": once})) == {"t": once}


def test_placeholders_are_never_redacted_again():
    text = (
        "TOKEN=[REDACTED:github_token] url=postgres://u:[REDACTED:url_password]@db/x "
        "[REDACTED:high_entropy]"
    )
    assert redact(text) == text
    assert find_secrets(text) == []
    # a new finding around an old placeholder is cut around it, not dropped
    partly = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow[REDACTED:high_entropy]AAKCAQ\nQz9"
    out = redact(partly)
    assert out == "[REDACTED:private_key][REDACTED:high_entropy][REDACTED:private_key]"
    assert redact(out) == out


def test_key_names_and_hosts_stay_readable():
    out = redact(
        'export DB_PASSWORD="s3cr3t-Pw-2024"\n'
        "postgres://alice:Xy7!pq9Lm@db.internal:5432/app\n"
        '{"api_key": "abc123def456ghi789"}'
    )
    assert 'export DB_PASSWORD="[REDACTED:password]"' in out
    assert "postgres://alice:[REDACTED:url_password]@db.internal:5432/app" in out
    assert '{"api_key": "[REDACTED:env_secret]"}' in out


def test_truncated_private_key_is_removed_to_the_end():
    text = (
        "here is the deploy key:\n-----BEGIN OPENSSH PRIVATE KEY-----\n"
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
        "QyNTUxOQAAACDx9Lk2mQ7vR8wZp3nYt0sB5cXh1uJ4aFe6gD"
    )
    assert redact(text) == "here is the deploy key:\n[REDACTED:private_key]"


def test_complete_private_key_block_keeps_the_text_around_it():
    text = (
        "before\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx7\nQz9\n"
        "-----END RSA PRIVATE KEY-----\nafter"
    )
    assert redact(text) == "before\n[REDACTED:private_key]\nafter"


def test_find_secrets_reports_kinds_and_offsets_in_order():
    text = "key sk-M0XvqZjxTW3xvboSRt5Mh3dAwVtRMflhbmuaptt0Azn0DNRU and AKIAB86W04NKTH169DXN"
    found = find_secrets(text)
    assert [k for k, _s, _e in found] == ["openai_key", "aws_access_key"]
    assert [text[s:e] for _k, s, e in found] == [
        "sk-M0XvqZjxTW3xvboSRt5Mh3dAwVtRMflhbmuaptt0Azn0DNRU",
        "AKIAB86W04NKTH169DXN",
    ]


def test_offsets_count_characters_in_non_ascii_text():
    text = "Schlüssel für Ünïcode 🔑: TOKEN=ghp_Mbj8KVuxgaaJl7LRiiQbLJmWZTsUryrgsVJN ✓"
    [(kind, s, e)] = find_secrets(text)
    assert kind == "github_token"
    assert text[s:e] == "ghp_Mbj8KVuxgaaJl7LRiiQbLJmWZTsUryrgsVJN"
    assert redact(text) == "Schlüssel für Ünïcode 🔑: TOKEN=[REDACTED:github_token] ✓"


def test_secret_named_json_keys_hide_their_whole_value():
    data = {"user": "alice", "password": "hunter2", "Authorization": "Bearer x9Kq2mZp7Lw4Rt8Yv1Bn"}
    assert redact_value(data) == {
        "user": "alice",
        "password": "[REDACTED:password]",
        "Authorization": "[REDACTED:bearer]",
    }
    # references and placeholders under secret names are not secrets
    refs = {"password": "${DB_PASSWORD}", "api_key": "", "token": None, "token_type": "Bearer"}
    assert redact_value(refs) == refs


def test_non_string_scalars_pass_through():
    assert redact_value(42) == 42
    assert redact_value(None) is None
    assert redact_value(1.5) == 1.5
    assert redact("") == ""
    assert find_secrets("short") == []


@pytest.mark.parametrize(
    "text",
    [
        "password=getpass()",
        'db_password = os.environ["DB_PASSWORD"]',
        "login(user, password=password)",
        "token = request.headers.get('Authorization')",
        "api_key: Optional[str] = None",
        "--password-stdin",
        "PASSWORD_MIN_LENGTH=12",
        "mysql -u root -p mydb",
        "docker run -p 8080:80 -u 1000:1000 nginx",
        "the password is wrong",
        "9fceb02 and e83c5163316f89bfbde7d9ab23ca2e25604af290",
        "5f0c2a9e-1b7d-4c3e-9a8f-2d6b4e1c7a90",
        "https://github.com/acme/widgets/pull/12",
    ],
)
def test_references_and_ordinary_text_are_not_secrets(text):
    assert find_secrets(text) == []


def test_a_value_found_at_one_place_of_a_text_is_redacted_at_every_other():
    """The rules see a password after `DATABASE_PASSWORD=`; the same value later in the same
    text, where no rule could see it, is redacted too (issue 32: memories/add kept it)."""
    from reos_memory.squirrel.redaction.engine import redact

    text = "DATABASE_PASSWORD=Tr0ub4dor-be3n in .env; the app read Tr0ub4dor-be3n at start"
    out = redact(text)
    assert "Tr0ub4dor" not in out and out.count("[REDACTED:password]") == 2, out
    # a short value (an ordinary word, likely) is not replaced everywhere
    assert redact("PASSWORD=abc12 and abc12").count("abc12") <= 1


def test_fly_io_tokens_are_redacted():
    """`FlyV1 fm2_...` (a comma-separated list of macaroons), wherever it shows."""
    import base64
    import hashlib

    from reos_memory.squirrel.redaction.engine import redact

    body = base64.b64encode(b"".join(hashlib.sha512(bytes([i])).digest() for i in range(2)))
    fly = f"FlyV1 fm2_{body.decode()},fm2_{body.decode()[:60]}"
    for said in (f"the deploy used {fly} as its token", f"Authorization: {fly}"):
        out = redact(said)
        assert body.decode()[:20] not in out and "[REDACTED:flyio_token]" in out, out


def test_a_password_of_brackets_is_a_password_not_a_template():
    """A quoted literal made mostly of brackets under a password name is redacted; templates,
    masks and placeholders in brackets (they hold a name or words) stay."""
    from reos_memory.squirrel.redaction.engine import redact

    for said in ('password: "[[]]{}()<>[]x1"', 'password = "{{[[((<<>>))]]}}"'):
        assert "[REDACTED:password]" in redact(said), said
    for kept in ("password: [REDACTED]", "password: <your-password>", "password = {password}",
                 "password: (none)"):  # fmt: skip
        assert redact(kept) == kept


def test_an_unquoted_env_value_of_brackets_is_a_password_and_code_stays():
    """In a .env or shell line the value runs to the next blank, whatever it opens with; a
    call or a subscript that closes before the blank is code."""
    from reos_memory.squirrel.redaction.engine import redact

    for said in (
        "DB_PASSWORD=[[]]{}()<>x1",
        "DB_PASSWORD=x[[]]{}[]()7",
        "export PGPASSWORD=(a]{7}<>[9",
    ):
        assert redact(said).endswith("[REDACTED:password]"), said
    for kept in (
        'API_KEY=os.environ["OPENAI_API_KEY"]',
        'SECRET_KEY=config().get("secret")',
        "DB_PASSWORD=getpass()",
        "DB_PASSWORD=[]",
        "DB_PASSWORD=${DB_PASS}",
        "export GH_TOKEN=$(gh auth token)",
    ):
        assert redact(kept) == kept, kept


def test_a_token_longer_than_its_format_is_redacted_to_its_end():
    from reos_memory.squirrel.redaction.engine import redact

    body = "1Ab2Cd3Ef4Gh5Ij6Kl7Mn8Op9Qr0St1Uv2Wx3Yz4Ab5Cd6Ef7Gh"  # 50: the format says 43
    out = redact(f"the app secret sq0csp-{body} is old")
    assert out == "the app secret [REDACTED:square_token] is old"


def test_a_salesforce_session_id_is_redacted_whole_and_an_org_id_stays():
    from reos_memory.squirrel.redaction.engine import redact

    body = "ARsAQHkT.qRw7fJ4k1Lz9mN2pX5vB8cY3dG6hK0sW_tU4eA7iO1rP9lM3nQ2xZ5yV8bC6jF0gD"
    out = redact(f"sf login: 00DE0000000abcd!{body}")
    assert out == "sf login: [REDACTED:salesforce_token]"
    kept = "org 00D5e000000AbCdEAA is the sandbox!"
    assert redact(kept) == kept


def test_a_yaml_anchor_before_a_value_is_no_part_of_it():
    """``password: &pw <value>`` gives the value after its anchor; an alias (``*pw``) and an
    anchor over a block of settings are references and stay."""
    from reos_memory.squirrel.redaction.engine import redact

    v = "Xq7pLm2Rt9Vw4Zk8"
    for said in (
        f"password: &pw {v}",
        f"db:\n  password: &dbpass {v}\n  replica_password: *dbpass",
        f'api_token: &tok "{v}"',
    ):
        out = redact(said)
        assert v not in out and "&" in out and "[REDACTED:" in out, out
        assert "*dbpass" in out or "*dbpass" not in said
    for kept in (
        "base: &defaults\n  adapter: postgres\ndevelopment:\n  <<: *defaults\n",
        "db:\n  password: *shared_db_password\n",
        "password: &pw\n  length: 12\n",
    ):
        assert redact(kept) == kept


def test_the_value_gh_secret_set_is_given_is_redacted_and_a_variable_or_file_stays():
    """``gh secret set NAME --body VALUE`` in its four spellings stores VALUE as a secret; a
    variable, a command's output or a file given instead is no secret."""
    from reos_memory.squirrel.redaction.engine import redact

    v = "Xq7pLm2Rt9Vw4Zk8"
    for said in (
        f"gh secret set API_TOKEN --body {v}",
        f'gh secret set API_TOKEN --body "{v}" --repo acme/api',
        f'gh secret set API_TOKEN -b"{v}"',
        f"gh secret set --env prod API_TOKEN -b {v}",
        f"gh secret set A\ngh secret set B --body={v}",
    ):
        out = redact(said)
        assert v not in out and "[REDACTED:env_secret]" in out, out
    for kept in (
        'gh secret set API_TOKEN --body "$TOKEN"',
        'gh secret set API_TOKEN --body "$(cat token.txt)"',
        "gh secret set API_TOKEN --body-file .env",
        "gh secret set -f .env.production",
        "gh secret set API_TOKEN < token.txt",
    ):
        assert redact(kept) == kept


# the command lines and settings commands that give a secret after a flag, a blank or a pipe:
# (form, the label its value is redacted with); each form's look-alikes below stay as they are
_COMMAND_LINE_SECRETS = [
    # a value piped into a secret store
    ("echo {v} | npx wrangler secret put API_TOKEN", "env_secret"),
    ("echo -n '{v}' | gh secret set API_TOKEN", "env_secret"),
    ("printf '%s' \"{v}\" | vercel env add API_TOKEN production", "env_secret"),
    ("printf {v} | vercel env add API_TOKEN production", "env_secret"),
    ("echo {v} | docker secret create db_password -", "env_secret"),
    # an archive's or an encryption's password flag
    ("openssl enc -aes-256-cbc -k {v} -in a.txt", "password"),
    ("zip -P {v} out.zip f", "password"),
    ("zip -r -P {v} backup.zip data/", "password"),
    ("unzip -P {v} out.zip", "password"),
    ("7z a -p{v} out.7z f", "password"),
    ("7za x -p{v} -o/tmp/out in.7z", "password"),
    ("rar a -p{v} out.rar f", "password"),
    ("zip -rP {v} out.zip dir", "password"),
    ("zip -9erP '{v}' out.zip dir", "password"),
    ("unzip -oP {v} in.zip", "password"),
    # the password htpasswd takes in batch mode
    ("htpasswd -b -c .htpasswd admin {v}", "password"),
    ("htpasswd -bc file user {v}", "password"),
    ("htpasswd -nbB user {v}", "password"),
    ("sudo htpasswd -nbB -C 12 ci '{v}' > .htpasswd", "password"),
    # a database account's password set in SQL
    ("CREATE USER app WITH PASSWORD '{v}';", "password"),
    ('ALTER ROLE app with password "{v}"', "password"),
    ("CREATE ROLE app WITH\n  LOGIN\n  ENCRYPTED PASSWORD '{v}';", "password"),
    ("CREATE USER 'app'@'%' IDENTIFIED BY '{v}';", "password"),
    ("create user app identified with mysql_native_password by '{v}'", "password"),
    ("CREATE USER scott IDENTIFIED BY {v};", "password"),
    ("GRANT ALL ON *.* TO 'app'@'localhost' IDENTIFIED BY '{v}'", "password"),
    ("SET PASSWORD FOR 'app'@'%' = '{v}';", "password"),
    ("SET PASSWORD = '{v}';", "password"),
    # any case the statement or command is typed in
    ("create user app Identified By '{v}';", "password"),
    ("Set Password for 'app'@'%' = '{v}';", "password"),
    ("Net Use Z: \\\\srv\\share {v} /user:bob", "password"),
    ("NET USER svc_backup {v} /ADD", "password"),
    ("$pw = convertto-SecureString '{v}' -AsPlainText -Force", "password"),
    ("set password for app@localhost = password('{v}')", "password"),
    ("ALTER USER 'app'@'%' IDENTIFIED BY '{v}';", "password"),
    # a Windows account's password after its name
    ("net user svc_backup {v} /add", "password"),
    ("net user svc_backup {v}", "password"),
    ('NET USER "Backup Svc" "{v}" /ADD /DOMAIN', "password"),
    # a package repository's credentials in poetry's settings
    ("poetry config http-basic.private ci {v}", "password"),
    ("poetry config --local http-basic.corp-pypi ci '{v}'", "password"),
    ("poetry config pypi-token.pypi {v}", "env_secret"),
    # a YAML core tag before a secret's value (the anchor's place)
    ("password: !!str {v}", "password"),
    ("db:\n  api_token: !!str '{v}'\n", "env_secret"),
    ("password: &pw !!binary {v}", "password"),
    # fly reads NAME=VALUE lines on its standard input
    ('echo "API_KEY={v}" | fly secrets import', "env_secret"),
    ("fly secrets set API_KEY={v} -a api", "env_secret"),
    # a file share's password
    ("smbclient //h/s -U user%{v}", "password"),
    ('smbclient //fs01/backup -U "CORP\\svc%{v}" -c ls', "password"),
    ("rpcclient -U admin%{v} 10.0.0.5", "password"),
    ("net use Z: \\\\srv\\share /user:me {v}", "password"),
    ("net use Z: \\\\srv\\share {v} /user:CORP\\me /persistent:no", "password"),
    ('NET USE * \\\\srv\\share "{v}" /USER:me', "password"),
    # a literal made a PowerShell secure string
    ("ConvertTo-SecureString '{v}' -AsPlainText -Force", "password"),
    ('$s = convertto-securestring -String "{v}" -asplaintext -force', "password"),
    ("ConvertTo-SecureString -AsPlainText -Force -String '{v}'", "password"),
    ("'{v}' | ConvertTo-SecureString -AsPlainText -Force", "password"),
]
_COMMAND_LINE_LOOKALIKES = [
    # an echo piped elsewhere or a variable piped into a store
    "echo hello | grep h",
    "echo hello | wc -c",
    "echo hello | grep secret",
    'echo "$API_TOKEN" | npx wrangler secret put API_TOKEN',
    "echo ok | gh secret list",
    "cat token.txt | gh secret set API_TOKEN",
    # an archive flag without a password
    "zip -r out.zip src",
    "openssl enc -aes-256-cbc -k $PASS -in a.txt",
    'unzip -P "$ZIP_PASSWORD" in.zip',
    "7z a -p out.7z src",
    "rar a -p- out.rar src",
    "7z x a.7z && tar -pxf b.tar",
    "curl -k https://localhost:8443",
    "xargs -P 4 zip -q",
    "zip -9rq out.zip src && zip -er out.zip src",
    "zip -rP $ZIP_PASS out.zip src",
    "tar -cvP -f a.tar /etc",
    # htpasswd without a password in batch mode
    "htpasswd -D .htpasswd admin",
    "htpasswd -c .htpasswd deploy2024",
    'htpasswd -nbB ci "$HTPASSWD_PASSWORD"',
    "htpasswd -b .htpasswd admin",
    "the htpasswd -b flag takes the password",
    # SQL that sets no literal password
    "CREATE USER app WITH PASSWORD :app_password;",
    "ALTER ROLE app WITH PASSWORD NULL;",
    "CREATE USER app IDENTIFIED BY :pw",
    "CREATE USER app IDENTIFIED BY PASSWORD '*6C8989366EAF75BB670AD8EA7A7FC1176A95CEF4'",
    "the key identified by 'deploy-2024' in the vault",
    "SELECT id FROM accounts WHERE role = 'admin'; UPDATE t SET password 'x2'",
    "SET PASSWORD FOR 'app'@'%' = @new_pw;",
    "SET PASSWORD = PASSWORD(@pw);",
    # a Windows account listed, asked for its password, deleted or switched off
    "net user",
    "net user bob *",
    "net user bob /delete",
    "net user admin2 /active:no",
    "net user /domain",
    "net users are listed by net user alone",
    # poetry's settings of no secret, the user alone (poetry asks), one removed
    "poetry config virtualenvs.in-project true",
    "poetry config http-basic.corp ci2",
    "poetry config --unset http-basic.corp",
    'poetry config pypi-token.pypi "$PYPI_TOKEN"',
    # a local YAML tag names where the value is: Home Assistant's !secret, CloudFormation's !Ref
    "api_password: !secret http_password",
    "DbPassword: !Ref DbPasswordParam",
    # an echo piped into fly's other commands, a variable into its import
    "echo hello | fly logs",
    'echo "API_KEY=$API_KEY" | fly secrets import',
    # a file share mounted with no password given
    "smbclient -L //fs01 -U guest%",
    'smbclient //fs01/s -U "svc%$SMB_PASS"',
    "net use Z: \\\\fs01\\backup /user:CORP\\svc * /persistent:no",
    "net use shows the mapped drives; net use Z: /delete",
    "run `net use \\\\fs01\\backup` then check the drive",
    "date -U +%Y && sort -U 50%",
    # a secure string made from a variable
    "$pw = ConvertTo-SecureString $env:DB_PASSWORD -AsPlainText -Force",
    '$sec = ConvertTo-SecureString "$Password" -AsPlainText -Force',
    "Read-Host -AsSecureString | ConvertFrom-SecureString",
]


@pytest.mark.parametrize(("said", "label"), _COMMAND_LINE_SECRETS)
def test_a_secret_given_on_a_command_line_is_redacted(said, label):
    from reos_memory.squirrel.redaction.engine import redact

    v = "Xq7pLm2Rt9Vw4Zk8"
    out = redact(said.format(v=v))
    assert v not in out and f"[REDACTED:{label}]" in out, out


@pytest.mark.parametrize("kept", _COMMAND_LINE_LOOKALIKES)
def test_a_command_line_that_gives_no_secret_stays(kept):
    from reos_memory.squirrel.redaction.engine import redact

    assert redact(kept) == kept


@pytest.mark.parametrize(
    "said",
    [
        # a weak secret a person chose that opens with a word, not with a provider's prefix
        "JWT_SECRET=secret_abc123x",
        "API_KEY=test_x9k2Lq7",
        "SESSION_SECRET=key-hunter22",
        # a password stays a password whatever it opens with
        "DB_PASSWORD=sk_live_pw12",
        # a whole token after the prefix, and one with its secret part in clear before a mask
        "STRIPE_KEY=sk_live_51Hq8ZtLmN4pQ2rS7vW9xY3bC6dF",
        "SECRET_KEY = 'django-insecure-k#2z@8v!q(w3e$r5t^y7u&i9o'",
    ],
)
def test_a_short_value_is_a_stand_in_only_after_a_providers_prefix(said):
    """`providers.cut_token`: a provider's prefix before a body too short for a token
    (``xoxb-42424242``) is no credential; the same shortness after a word a person may choose
    (``secret_``, ``test_``) may be their weak secret."""
    from reos_memory.squirrel.redaction.engine import redact

    assert "[REDACTED:" in redact(said)


@pytest.mark.parametrize(
    "said",
    [
        "AZURE_SAS_TOKEN=sv=2022-11-02&ss=b&sp=rl&se=2027-01-01T00:00:00Z&sig=Xq7pLm2Rt9Vw4Zk8Ab3d%3D",
        "API_TOKEN=user=app&password=hunter22&db=orders",
        "AUTH_TOKEN=a=Xq7pLm2Rt9Vw4Zk8&b=c&d=e",
    ],
)
def test_a_query_under_a_tokens_name_is_settings_only_without_a_secret_in_it(said):
    """A SAS token's parameters alone (``sv=...&sp=rl&se=...``) grant nothing and stay; with
    its ``sig``, a password or a random value the query is redacted."""
    from reos_memory.squirrel.redaction.engine import redact

    assert "[REDACTED:" in redact(said)


@pytest.mark.parametrize(
    ("said", "secret"),
    [
        (
            'I am sending Authorization: Bearer "a8f5f167f44f4964e6c998dee827110c" and get 401',
            "a8f5f167f44f4964e6c998dee827110c",
        ),
        (
            "curl -H 'Authorization: Bearer \"9f8e7d6c5b4a39281706f5e4d3c2b1a0\"' https://x.test",
            "9f8e7d6c5b4a39281706f5e4d3c2b1a0",
        ),
        ("The password 'Tr0ub4dor-be3n-x9' is for staging only", "Tr0ub4dor-be3n-x9"),
        ("Connect as admin with passwd 'Tr0ub4dor-be3n-x9' to the staging db", "Tr0ub4dor-be3n-x9"),
        ('Set password "Zq7Wm2Lk9Pn4Xr6T" on the test user and retry.', "Zq7Wm2Lk9Pn4Xr6T"),
        ('use token "ghx7Hq2Lk9Pn4Xr6Tz81" for the bot', "ghx7Hq2Lk9Pn4Xr6Tz81"),
        ("the api key 'Zq7Wm2Lk9Pn4Xr6T' is the old one", "Zq7Wm2Lk9Pn4Xr6T"),
        # typed with smart punctuation: the readings see typed quotes, and so does redaction
        (
            "I\u2019m sending Authorization: Bearer \u201ca8f5f167f44f4964e6c998dee827110c\u201d",
            "a8f5f167f44f4964e6c998dee827110c",
        ),
        ("The password \u2018Tr0ub4dor-be3n-x9\u2019 is for staging", "Tr0ub4dor-be3n-x9"),
        # a passphrase of words, and anything quoted after "passphrase"
        ('the wifi password "correct horse battery staple" works', "correct horse battery staple"),
        ("log in with passwd 'tiny green apple tree' on the box", "tiny green apple tree"),
        ("the key's passphrase \u201cTroubador & Tonic 4ever\u201d", "Troubador & Tonic 4ever"),
    ],
)
def test_a_value_quoted_right_after_a_secrets_name_in_words_is_redacted(said, secret):
    """In chat a secret is often given quoted after its name with no "is" between ("the
    password 'x' is for staging", 'Bearer "x"'); the message is read with typed quotes, so both
    spellings of the quotes are covered."""
    assert secret not in redact(said)  # (as a memory added as text is: no typed quotes)
    assert secret not in redact(typed_quotes(said))
    stored = compress(EventIn(role="user", kind="message", text=said), 0, None)
    assert secret not in json.dumps(stored, ensure_ascii=False)


@pytest.mark.parametrize(
    "kept",
    [
        '#define ERR_BAD_PASSWORD "Incorrect password"',
        "click the password 'Submit' button",
        'the token "refresh" is sent on every call',
        "the cache key 'user:42' expired",
        "the password 'Not set' label shows until the user saves one",
        "the password \u2018Submit\u2019 button",
        'the password "Forgot your password?" link',
        "htpasswd -D .htpasswd admin && htpasswd -c .htpasswd deploy2024",
    ],
)
def test_a_quoted_label_or_constant_after_a_secrets_name_stays(kept):
    assert redact(kept) == kept


@pytest.mark.parametrize(
    "kept",
    [
        # zeros that fill a token's place, whole or after its visible head
        "SOURCEGRAPH_TOKEN=sgp_local_0000000000000000000000000000000000000000",
        'GITHUB_TOKEN="ghp_Rk4Wq8Zt2Ln6Yc0000000000000000000000"',
        # a placeholder password of one letter typed over and over
        'curl -u "deploy:qqqq" https://ci.internal.test/api',
        "DB_PASSWORD=zzzzzz",
        # a token its name says is public
        'mapPublicToken = "Wq4Rz8Tn2Lm6Yv0Kp3Hd7Jx5Bc9Fg1Ns"',
        "widget_public_token: Hb6Nq1Zt8Wc3Rk5Lp9Xv2Mj7Ds4Gf0Ya",
    ],
)
def test_zeros_a_repeated_letter_and_a_public_token_stay(kept):
    assert redact(kept) == kept


@pytest.mark.parametrize(
    ("said", "secret"),
    [
        # zeros inside a random value: an edit of a real one
        (
            "AWS_SECRET_ACCESS_KEY=wJq7XUtnFEMI0000000000000000bPxRfiCYzz",
            "wJq7XUtnFEMI0000000000000000bPxRfiCYzz",
        ),
        # a repeated digit is a PIN or a password; a letter repeated past 8 is no stand-in
        ("mysql -u root -p111111 orders", "111111"),
        ("DB_PASSWORD=zzzzzzzzzz", "zzzzzzzzzz"),
        # a token a public name only holds, and a public name that names a secret
        (
            "NEXT_PUBLIC_API_TOKEN=Wq4Rz8Tn2Lm6Yv0Kp3Hd7Jx5Bc9Fg1Ns",
            "Wq4Rz8Tn2Lm6Yv0Kp3Hd7Jx5Bc9Fg1Ns",
        ),
        (
            "public_token_secret: Hb6Nq1Zt8Wc3Rk5Lp9Xv2Mj7Ds4Gf0Ya",
            "Hb6Nq1Zt8Wc3Rk5Lp9Xv2Mj7Ds4Gf0Ya",
        ),
    ],
)
def test_the_near_forms_of_zeros_repeats_and_public_names_stay_redacted(said, secret):
    assert secret not in redact(said)


def test_a_private_key_block_of_a_template_stays_and_one_with_key_material_goes():
    """A whole block whose body holds no run of a key's base64 is a stand-in; one with a line of
    it (even cut with ``...``) or one cut off before its END line is redacted."""
    stand_in = "-----BEGIN RSA PRIVATE KEY-----\n<paste your key>\n-----END RSA PRIVATE KEY-----"
    assert redact(stand_in) == stand_in
    cut = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC...\n-----END PRIVATE KEY-----"
    assert "MIIEvQIBADANBgkq" not in redact(cut)
    open_block = "-----BEGIN PRIVATE KEY-----\nyour key"
    assert "your key" not in redact(open_block)


@pytest.mark.parametrize(
    ("said", "secret"),
    [
        # a whole token before an ellipsis fits its format: a secret
        (
            "GROQ_API_KEY=gsk_" + "Rk4Wq8Zt2Ln6Yc3Vb7Mx1Pd5Sg9Hj0Kf2La4Tn8Wq2Zc6Xv1B...",
            "Rk4Wq8Zt2Ln6Yc3Vb7Mx1Pd5Sg9Hj0Kf2La4Tn8Wq2Zc6Xv1B",
        ),
        # a head longer than its format's longest token is no cut one
        (
            "GROQ_API_KEY=gsk_"
            + "Rk4Wq8Zt2Ln6Yc3Vb7Mx1Pd5Sg9Hj0Kf2La4Tn8Wq2Zc6Xv1Bm5Nq3Lp7Yt0Hd4...",
            "Rk4Wq8Zt2Ln6Yc3Vb7Mx1Pd5Sg9Hj0Kf2La4",
        ),
        # no ellipsis, or a prefix whose formats are not known here (GitHub's), or a word's
        ("GROQ_API_KEY=gsk_Rk4Wq8Zt2Ln6Yc3Vb7Mx1Pd5Sg9", "Rk4Wq8Zt2Ln6Yc3Vb7Mx1Pd5Sg9"),
        ("GITHUB_TOKEN=ghp_Rk4Wq8Zt2Ln6Yc3Vb7Mx1Pd5...", "Rk4Wq8Zt2Ln6Yc3Vb7Mx1Pd5"),
        ("API_KEY=test_Rk4Wq8Zt2Ln6Yc3Vb7...", "Rk4Wq8Zt2Ln6Yc3Vb7"),
        # one dot ends a sentence
        ("GROQ_API_KEY=gsk_Rk4Wq8Zt2Ln6Yc3Vb7Mx1Pd5Sg9.", "Rk4Wq8Zt2Ln6Yc3Vb7Mx1Pd5Sg9"),
    ],
)
def test_only_a_head_shorter_than_its_format_before_an_ellipsis_is_a_cut_token(said, secret):
    """`providers.elided_token`: ``ops_eyJkZXZp...`` (a 1Password token needs 100 characters
    more) is the head of a cut token and stays; these are secrets."""
    assert secret not in redact(said)


def test_the_head_of_a_token_cut_with_an_ellipsis_stays():
    for kept in (
        "export OP_SERVICE_ACCOUNT_TOKEN=ops_eyJhbGciOiJIUzI1NiIsInR5cCI6...",
        "groq_key: gsk_Rk4Wq8Zt2Ln6Yc3Vb7\u2026",
    ):
        assert redact(kept) == kept


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # a connection string given to a token's name: its own Password= is read
        (
            "db_token = 'Server=db.corp;Database=app;User Id=sa;Password=Vq7!mZ2pLw9x;'",
            "Vq7!mZ2pLw9x",
        ),
        # a bare key's issued token of base64 pieces joined by = or a dot
        ("[DEBUG] Using Key=Hq7Lm2Zx9Wc4Rt8p=Nv3Bk6Yd1Fs5Gj0q", "Hq7Lm2Zx9Wc4Rt8p"),
        ("[DEBUG] Using Key=QK7M2ZX9WC4RT8PB.N3BK6YD-1FS5GJ0", "QK7M2ZX9WC4RT8PB"),
        # a provider's token whose random body has no digit
        ("stripe token: sk_live_WqRtYuPlKjHgFdSaZxCvBnMq", "sk_live_WqRtYuPlKjHgFdSaZxCvBnMq"),
        # a real key's head before zeros; a password of one letter in two cases
        ("SECRET_KEY=Ab3dE5fG7hJ9kL1mN3pQ5rS70000000000000000", "Ab3dE5fG7hJ9kL1mN3pQ5rS7"),
        ("DB_PASSWORD=Qqqqqqqq", "Qqqqqqqq"),
    ],
)
def test_this_sittings_shapes_of_a_secret_are_redacted(text, secret):
    assert secret not in redact(text)


@pytest.mark.parametrize(
    "kept",
    [
        "listing key=part-00001-9c1d2e3f-4a5b-6c7d-8e9f-0a1b2c3d4e5f-c000.snappy.parquet",
        "cursor key=eyJvZmZzZXQiOjQwfQ== (the next page)",
        "[DEBUG] Using Key=3f9a2c1b7e4d.pem from the vault mount",
        "key=com.example.billing.InvoiceService",
        'apiKey: "AIza' + "a" * 35 + '"',
        "DB_PASSWORD=zzzzzz",
    ],
)
def test_this_sittings_look_alikes_stay(kept):
    assert redact(kept) == kept
