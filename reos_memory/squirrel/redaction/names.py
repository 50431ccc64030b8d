"""Which names (variables, keys, headers, flags) name a secret, and how sure the name is."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

_CAMEL_RE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")

_PASSWORD_WORDS = frozenset(
    {
        "password",
        "passwd",
        "passwrd",
        "pwd",
        "pass",
        "pw",
        "passphrase",
        "passcode",
        "pword",
        # keytool's and jarsigner's flags
        "storepass",
        "keypass",
        "srcstorepass",
        "deststorepass",
        "srckeypass",
        "destkeypass",
    }
)
_SECRET_WORDS = frozenset(
    {
        "secret", "token", "apikey", "credential", "credentials", "creds", "privatekey",
        "accesskey", "secretkey", "clientsecret", "authtoken", "accesstoken", "refreshtoken",
        "idtoken", "bearer", "apitoken", "authorization", "xsrftoken", "csrftoken",
    }
)  # fmt: skip
_KEY_PAIRS = frozenset(
    {
        "api", "access", "secret", "private", "account", "auth", "master", "encryption",
        "signing", "app", "license", "sas", "shared", "subscription", "consumer", "client",
        "storage", "webhook", "hmac", "jwt", "session", "service", "admin", "write", "deploy",
        "management", "root", "server", "bot", "integration", "personal", "cloud", "live",
    }
)  # fmt: skip
_WEAK_WORDS = frozenset(
    {"auth", "session", "sessionid", "sessid", "cookie", "signature", "sig", "salt", "sid"}
)
# A last part like these means the name is about the secret, not the secret itself.
_NOT_SECRET_SUFFIXES = frozenset(
    {
        "url", "uri", "urls", "endpoint", "host", "hostname", "port", "type", "types", "kind",
        "length", "len", "size", "count", "limit", "min", "max", "expiry", "expires",
        "expiration", "expire", "exp", "ttl", "timeout", "lifetime", "age", "file", "files",
        "path", "dir", "directory", "name", "names", "id", "ids", "header", "prefix", "suffix",
        "field", "fields", "policy", "required", "enabled", "enable", "disabled", "rotation",
        "format", "env", "var", "label", "hint", "placeholder", "style", "input", "mode",
        "version", "algorithm", "alg", "scope", "scopes", "location", "method", "provider",
        "strategy", "store", "manager", "service", "helper", "class", "module", "regex",
        "pattern", "hash", "hashed", "digest", "reset", "validation", "valid", "validator",
        "strength", "score", "error", "errors", "message", "msg", "text", "prompt", "usage",
        "budget", "index", "flag", "flags", "option", "options", "schema", "request",
        "response", "status", "state", "counter", "handler", "callback", "test", "tests",
        "mock", "factory", "loader", "parser", "encoder", "decoder", "cache", "bucket",
        "tokens", "changed", "confirmation", "rules", "check", "checker", "form", "button",
        "page", "view", "route", "template", "lookup", "source", "ref", "command", "cmd",
        "stdin", "prompted", "protected", "less", "based", "seconds", "secs", "sec", "ms",
        "minutes", "mins", "hours", "days", "millis", "retries", "attempts", "offset",
        "through", "thru", "rate", "ratio", "number", "num", "at", "start", "end", "begin",
        "open", "close", "marker", "separator", "delimiter", "sep", "char", "chars", "map",
        "alphabet", "charset",
    }
)  # fmt: skip
# "<x>_key" as a config file's key or a flag names a secret (adafruit_io_key, stripe_key) unless x
# says which key of data it is
_NOT_SECRET_BEFORE_KEY = frozenset(
    {
        "cache", "sort", "partition", "primary", "foreign", "dict", "row", "lookup", "idempotency",
        "dedup", "dedupe", "map", "object", "s3", "bucket", "index", "composite", "unique",
        "cursor", "routing", "shard", "hot", "group", "message", "event", "react", "list", "item",
        "query", "hash", "lock", "ssh", "public", "translation", "i18n", "config", "setting",
        "settings", "registry", "metadata", "field", "column", "table", "record", "redis", "kv",
        "request", "commit", "sha", "git", "etag", "content", "digest", "job", "task", "image",
        "file", "node", "blob", "layer", "manifest", "checksum", "doc", "document", "user",
        "tenant", "trace", "build", "asset", "upload", "attachment", "media", "thumbnail",
        "avatar", "video", "photo", "entity", "resource", "product", "order", "customer",
    }
)  # fmt: skip
# Tokenizer and pagination tokens are not credentials.
_NOT_SECRET_BEFORE_TOKEN = frozenset(
    {
        "page", "next", "prev", "previous", "continuation", "cursor", "sync", "pagination",
        "resume", "eos", "bos", "pad", "unk", "sep", "cls", "mask", "special", "start", "end",
        "stop", "max", "num", "input", "output", "prompt", "completion", "total", "per",
    }
)  # fmt: skip


# Bundler reads a gem source's "user:password" from BUNDLE_<HOST>, dots written as "__" (a host
# ends in a top-level domain; BUNDLE_BUILD__NOKOGIRI and BUNDLE_PATH__SYSTEM are settings)
TOP_LEVEL_DOMAINS = (
    "COM|ORG|NET|DEV|APP|CLOUD|TECH|SH|IO|CO|AI|ME|EU|US|UK|DE|FR|NL|CH|AT|SE|JP|XYZ"
)
_BUNDLER_HOST_RE = re.compile(r"BUNDLE_[A-Z0-9_]+__(?:" + TOP_LEVEL_DOMAINS + ")")


class NameInfo(NamedTuple):
    tier: int  # 0: password words, 1: secret words, 2: weak words (value must look random)
    kind: str
    header: bool  # Authorization-style: the value may start with a scheme word
    # a name like "adafruit_io_key": a secret as a config file's key ("...": "..."), but in code
    # as often a key of data (image_key = "sha256:...", request_key = "req_01H...")
    quoted_only: bool = False
    # a vendor's key (ETSY_KEY, etsy_key): hex is as likely a key as a digest under this name
    hex_ok: bool = False
    # the value must be shaped like an issued token (a PAT, a vendor's key in code): letters and
    # digits, not a regex (url_pat = "^/api/...") nor a hash with its algorithm
    token_only: bool = False
    # the value must be a UUID (Vault's secret_id), not a name or an ARN
    uuid_only: bool = False


TIER_PASSWORD = 0
TIER_SECRET = 1
TIER_WEAK = 2


# what owns a "pass" or a "pw" that is a password (db_pass, --smtp-pass, smtpPass), where a code's
# pass is a step of an algorithm (first_pass, render_pass, backward_pass)
_PASS_OWNERS = frozenset(
    {"db", "database", "mysql", "postgres", "pg", "sql", "mongo", "redis", "smtp", "mail",
     "email", "ftp", "sftp", "ssh", "admin", "root", "user", "login", "wifi", "vnc", "ldap",
     "proxy", "keystore", "store", "basic", "bind", "master", "rabbitmq", "amqp", "vault",
     "account", "sa", "rdp"}
)  # fmt: skip


@lru_cache(maxsize=4096)
def name_info(name: str) -> NameInfo | None:
    """Classify a variable/key/flag name by the secret word among its parts, or None."""
    bare = name.strip("-.$@:\\\"'").rpartition(".")[2]  # token.map is about a map
    if not bare:
        return None
    chunks = re.split(r"[_.\-\s]+", bare)
    parts = [p.lower() for chunk in chunks for p in _CAMEL_RE.findall(chunk)]
    if not parts:
        return None
    if _BUNDLER_HOST_RE.fullmatch(bare):
        return NameInfo(TIER_PASSWORD, "password", False)  # user:password for a gem source
    last = parts[-1]
    if parts[-2:] == ["secret", "id"] and (
        parts[-3:-2] == ["vault"] or (parts[-3:-2] == [] and len(chunks) >= 2)
    ):
        # Vault's AppRole secret_id (secret_id, SECRET_ID, --secret-id, VAULT_SECRET_ID) is a
        # credential, a UUID; AWS's SecretId names a secret, Bitwarden's secretId and Azure's
        # client_secret_id are ids
        return NameInfo(TIER_SECRET, "env_secret", False, uuid_only=True)
    if last in _NOT_SECRET_SUFFIXES and not (last == "id" and parts[-2:-1] == ["session"]):
        return None
    joined = "".join(parts)
    if "public" in parts or "publishable" in parts:
        return None  # publicKeyToken, STRIPE_PUBLISHABLE_KEY: meant to be seen
    if "authorization" in parts:
        return NameInfo(TIER_SECRET, "bearer", True)
    # "pass" and "pw" are also compiler/algorithm passes and powers in code (first_pass,
    # backward_pass); they name a password only in UPPER_CASE env names or on their own.
    loose_ok = bare.isupper() or len(parts) == 1
    if any(
        (
            p in _PASSWORD_WORDS
            and (loose_ok or p not in ("pass", "pw") or (i > 0 and parts[i - 1] in _PASS_OWNERS))
        )
        or p.endswith(("password", "passwd"))
        for i, p in enumerate(parts)
    ):
        return NameInfo(TIER_PASSWORD, "password", False)
    # words a name shows by its separators or case, not by digits ("q7pat9x2" is no name)
    shown = {
        w.lower()
        for chunk in chunks
        for w in (_CAMEL_RE.findall(chunk) if not any(c.isdigit() for c in chunk) else [chunk])
    }
    loose_password = bool(shown & {"pass", "pw"})  # db_pass, or first_pass
    if "aws" in parts and "secret" in parts:
        return NameInfo(TIER_SECRET, "aws_secret_key", False)
    for i, p in enumerate(parts):
        if p == "token" and i > 0 and parts[i - 1] in _NOT_SECRET_BEFORE_TOKEN:
            return None
        if p in _SECRET_WORDS or (p.endswith(("secret", "token")) and len(p) > 6):
            return NameInfo(TIER_SECRET, "env_secret", False)
        if p == "key" and i > 0 and parts[i - 1] in _KEY_PAIRS:
            return NameInfo(TIER_SECRET, "env_secret", False)
    if joined.endswith(("apikey", "secretkey", "accesskey", "privatekey")):
        return NameInfo(TIER_SECRET, "env_secret", False)
    vendor_key = last == "key" and len(parts) > 1 and parts[-2] not in _NOT_SECRET_BEFORE_KEY
    if any(p in _WEAK_WORDS for p in parts) or (
        last == "key" and len(parts) > 1 and bare.isupper()
    ):
        # (its value must look random)
        return NameInfo(TIER_WEAK, "env_secret", False, hex_ok=vendor_key)
    if vendor_key:
        return NameInfo(
            TIER_WEAK, "env_secret", False, quoted_only=True, hex_ok=True, token_only=True
        )
    if parts == ["key"]:
        # a bare key=, Key: (a log's "Using Key=...", a form's field): a secret when its value
        # is shaped like an issued token, not a cache's or a map's key (user:42, a digest)
        return NameInfo(TIER_WEAK, "env_secret", False, token_only=True)
    if "pat" in shown:  # AZURE_DEVOPS_PAT, githubPat: a personal access token
        return NameInfo(TIER_WEAK, "env_secret", False, token_only=True)
    if loose_password:
        return NameInfo(TIER_WEAK, "password", False)  # a random value makes it a password
    return None


def names_secret(word: str) -> bool:
    """True when an identifier used as a value is itself a secret-named variable."""
    return name_info(word) is not None
