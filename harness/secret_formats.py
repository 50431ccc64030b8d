"""An external-style secret corpus: real formats of many providers, random values, real contexts.

The formats (prefix, alphabet, length) are facts from the providers' documentation and from the
public rule sets of secret scanners; every value here is generated from a seeded random source, so
none was ever a live credential. `cases()` embeds each secret in the ways people leak them: pasted
in chat, in a stack trace, in ``.env`` / ``export`` lines, config files, CLI flags, URLs, split
over two messages, in full-width characters and with a zero-width space inside. `LOOKALIKES` are
strings that look random but are not secrets and must survive redaction unchanged.

Used by ``tools/eval_secrets.py`` (every ingestion path, every table) and by the tests.
"""

from __future__ import annotations

import base64
import random
import string
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

HEX = "0123456789abcdef"
UHEX = "0123456789ABCDEF"
ALNUM = string.ascii_letters + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
UPPER_ALNUM = string.ascii_uppercase + string.digits
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
LETTERS = string.ascii_letters

Gen = Callable[[random.Random], str]


def r(alphabet: str, n: int) -> Gen:
    """A generator of `n` characters from `alphabet`."""
    return lambda rng: "".join(rng.choice(alphabet) for _ in range(n))


def cat(*parts: str | Gen) -> Gen:
    """Literal parts and generated parts, joined."""
    return lambda rng: "".join(p if isinstance(p, str) else p(rng) for p in parts)


def _jwt_like(rng: random.Random) -> str:
    import base64
    import json

    def seg(obj: object) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    header = seg({"alg": "HS256", "typ": "JWT"})
    body = seg({"sub": r(LOWER_ALNUM, 12)(rng), "iat": rng.randint(1_600_000_000, 1_800_000_000)})
    return f"{header}.{body}.{r(B64URL, 43)(rng)}"


# a UUID's shape (HubSpot's and Plaid's tokens hold one)
_uuid = cat(r(HEX, 8), "-", r(HEX, 4), "-", r(HEX, 4), "-", r(HEX, 4), "-", r(HEX, 12))


@dataclass(frozen=True)
class Kind:
    """One secret format: its name, a value generator, the variable people keep it in, and
    whether the value alone (with no name around it) identifies it as a secret."""

    name: str
    gen: Gen
    env: str
    prefixed: bool = True


# Prefixed formats: recognisable alone. (name, generator, usual variable name)
KINDS: list[Kind] = [
    Kind(
        "openai_project",
        cat("sk-proj-", r(B64URL, 74), "T3BlbkFJ", r(B64URL, 74)),
        "OPENAI_API_KEY",
    ),
    Kind("openai_legacy", cat("sk-", r(ALNUM, 20), "T3BlbkFJ", r(ALNUM, 20)), "OPENAI_API_KEY"),
    Kind("openai_svcacct", cat("sk-svcacct-", r(B64URL, 58)), "OPENAI_API_KEY"),
    Kind("openrouter", cat("sk-or-v1-", r(HEX, 64)), "OPENROUTER_API_KEY"),
    Kind("anthropic", cat("sk-ant-api03-", r(B64URL, 93), "AA"), "ANTHROPIC_API_KEY"),
    Kind("anthropic_admin", cat("sk-ant-admin01-", r(B64URL, 93), "AA"), "ANTHROPIC_ADMIN_KEY"),
    Kind("deepseek", cat("sk-", r(HEX, 32)), "DEEPSEEK_API_KEY"),
    Kind("groq", cat("gsk_", r(ALNUM, 52)), "GROQ_API_KEY"),
    Kind("xai", cat("xai-", r(ALNUM, 80)), "XAI_API_KEY"),
    Kind("perplexity", cat("pplx-", r(ALNUM, 48)), "PERPLEXITY_API_KEY"),
    Kind("replicate", cat("r8_", r(ALNUM, 37)), "REPLICATE_API_TOKEN"),
    Kind("huggingface", cat("hf_", r(LETTERS, 34)), "HF_TOKEN"),
    Kind("huggingface_org", cat("api_org_", r(LETTERS, 34)), "HF_ORG_TOKEN"),
    Kind("elevenlabs", cat("sk_", r(HEX, 48)), "ELEVENLABS_API_KEY"),
    Kind("tavily", cat("tvly-", r(ALNUM, 32)), "TAVILY_API_KEY"),
    Kind("firecrawl", cat("fc-", r(HEX, 32)), "FIRECRAWL_API_KEY"),
    Kind("langsmith", cat("lsv2_pt_", r(HEX, 32), "_", r(HEX, 10)), "LANGSMITH_API_KEY"),
    Kind("langsmith_sk", cat("lsv2_sk_", r(HEX, 32), "_", r(HEX, 10)), "LANGCHAIN_API_KEY"),
    Kind("pinecone", cat("pcsk_", r(ALNUM, 5), "_", r(ALNUM, 63)), "PINECONE_API_KEY"),
    Kind("aws_key_id", cat("AKIA", r(UPPER_ALNUM, 16)), "AWS_ACCESS_KEY_ID"),
    Kind("aws_sts_id", cat("ASIA", r(UPPER_ALNUM, 16)), "AWS_ACCESS_KEY_ID"),
    Kind("github_classic", cat("ghp_", r(ALNUM, 36)), "GITHUB_TOKEN"),
    Kind("github_oauth", cat("gho_", r(ALNUM, 36)), "GH_TOKEN"),
    Kind("github_fine", cat("github_pat_", r(ALNUM, 22), "_", r(ALNUM, 59)), "GITHUB_PAT"),
    Kind("gitlab_pat", cat("glpat-", r(B64URL, 20)), "GITLAB_TOKEN"),
    Kind("gitlab_runner", cat("glrt-", r(B64URL, 20)), "CI_RUNNER_TOKEN"),
    Kind(
        "slack_bot",
        cat("xoxb-", r(string.digits, 12), "-", r(string.digits, 13), "-", r(ALNUM, 24)),
        "SLACK_BOT_TOKEN",
    ),
    Kind(
        "slack_user",
        cat(
            "xoxp-",
            r(string.digits, 12),
            "-",
            r(string.digits, 12),
            "-",
            r(string.digits, 13),
            "-",
            r(HEX, 32),
        ),
        "SLACK_TOKEN",
    ),
    Kind(
        "slack_app",
        cat("xapp-1-A", r(UPPER_ALNUM, 10), "-", r(string.digits, 13), "-", r(HEX, 64)),
        "SLACK_APP_TOKEN",
    ),
    Kind("stripe_live", cat("sk_live_", r(ALNUM, 99)), "STRIPE_SECRET_KEY"),
    Kind("stripe_restricted", cat("rk_live_", r(ALNUM, 99)), "STRIPE_KEY"),
    Kind("stripe_webhook", cat("whsec_", r(ALNUM, 32)), "STRIPE_WEBHOOK_SECRET"),
    Kind("google_api", cat("AIza", r(B64URL, 35)), "GOOGLE_API_KEY"),
    Kind("google_oauth_secret", cat("GOCSPX-", r(B64URL, 28)), "GOOGLE_CLIENT_SECRET"),
    Kind("google_access", cat("ya29.a0", r(B64URL, 120)), "GOOGLE_ACCESS_TOKEN"),
    Kind("npm", cat("npm_", r(ALNUM, 36)), "NPM_TOKEN"),
    Kind("pypi", cat("pypi-AgEIcHlwaS5vcmc", r(B64URL, 70)), "PYPI_TOKEN"),
    Kind("rubygems", cat("rubygems_", r(HEX, 48)), "GEM_HOST_API_KEY"),
    Kind("nuget", cat("oy2", r(string.ascii_lowercase + string.digits, 43)), "NUGET_API_KEY"),
    Kind("docker_hub", cat("dckr_pat_", r(B64URL, 27)), "DOCKERHUB_TOKEN"),
    Kind("sendgrid", cat("SG.", r(B64URL, 22), ".", r(B64URL, 43)), "SENDGRID_API_KEY"),
    Kind("mailgun", cat("key-", r(HEX, 32)), "MAILGUN_API_KEY"),
    Kind("mailchimp", cat(r(HEX, 32), "-us12"), "MAILCHIMP_API_KEY"),
    Kind("digitalocean", cat("dop_v1_", r(HEX, 64)), "DIGITALOCEAN_TOKEN"),
    Kind("sentry_user", cat("sntryu_", r(HEX, 64)), "SENTRY_AUTH_TOKEN"),
    Kind(
        "sentry_org",
        cat("sntrys_eyJpYXQiOjE3", r(B64URL, 60), "_", r(B64URL, 43)),
        "SENTRY_AUTH_TOKEN",
    ),
    Kind("shopify_access", cat("shpat_", r(HEX, 32)), "SHOPIFY_ACCESS_TOKEN"),
    Kind("shopify_secret", cat("shpss_", r(HEX, 32)), "SHOPIFY_SHARED_SECRET"),
    Kind("linear", cat("lin_api_", r(ALNUM, 40)), "LINEAR_API_KEY"),
    Kind("notion", cat("ntn_", r(string.digits, 11), r(ALNUM, 35)), "NOTION_TOKEN"),
    Kind("notion_legacy", cat("secret_", r(ALNUM, 43)), "NOTION_API_KEY"),
    Kind("supabase", cat("sbp_", r(HEX, 40)), "SUPABASE_ACCESS_TOKEN"),
    Kind("grafana_sa", cat("glsa_", r(ALNUM, 32), "_", r(HEX, 8)), "GRAFANA_TOKEN"),
    Kind("postman", cat("PMAK-", r(HEX, 24), "-", r(HEX, 34)), "POSTMAN_API_KEY"),
    Kind("doppler", cat("dp.st.", r(ALNUM, 43)), "DOPPLER_TOKEN"),
    Kind("pulumi", cat("pul-", r(HEX, 40)), "PULUMI_ACCESS_TOKEN"),
    Kind("terraform", cat(r(ALNUM, 14), ".atlasv1.", r(ALNUM, 67)), "TFE_TOKEN"),
    Kind("newrelic", cat("NRAK-", r(UPPER_ALNUM, 27)), "NEW_RELIC_API_KEY"),
    Kind("vault_service", cat("hvs.", r(B64URL, 90)), "VAULT_TOKEN"),
    Kind("vault_legacy", cat("s.", r(ALNUM, 24)), "VAULT_TOKEN"),
    Kind("age", cat("AGE-SECRET-KEY-1", r("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)), "SOPS_AGE_KEY"),
    Kind("telegram", cat(r(string.digits, 10), ":AA", r(B64URL, 33)), "TELEGRAM_BOT_TOKEN"),
    Kind("netlify", cat("nfp_", r(ALNUM, 36)), "NETLIFY_AUTH_TOKEN"),
    Kind("flyio", cat("fo1_", r(B64URL, 43)), "FLY_API_TOKEN"),
    Kind("render", cat("rnd_", r(ALNUM, 32)), "RENDER_API_KEY"),
    Kind("figma", cat("figd_", r(B64URL, 40)), "FIGMA_TOKEN"),
    Kind("resend", cat("re_", r(ALNUM, 8), "_", r(ALNUM, 24)), "RESEND_API_KEY"),
    Kind("sonarqube", cat("squ_", r(HEX, 40)), "SONAR_TOKEN"),
    Kind("buildkite", cat("bkua_", r(HEX, 40)), "BUILDKITE_API_TOKEN"),
    Kind("planetscale", cat("pscale_tkn_", r(B64URL, 43)), "PLANETSCALE_SERVICE_TOKEN"),
    Kind("prefect", cat("pnu_", r(ALNUM, 36)), "PREFECT_API_KEY"),
    Kind("readme", cat("rdme_", r(HEX, 70)), "README_API_KEY"),
    Kind("dynatrace", cat("dt0c01.", r(UPPER_ALNUM, 24), ".", r(UPPER_ALNUM, 64)), "DT_API_TOKEN"),
    Kind("contentful", cat("CFPAT-", r(B64URL, 43)), "CONTENTFUL_MANAGEMENT_TOKEN"),
    Kind("atlassian", cat("ATATT3xFfGF0", r(B64URL, 170), "=", r(UHEX, 8)), "JIRA_API_TOKEN"),
    Kind("artifactory", cat("AKCp", r(ALNUM, 69)), "ARTIFACTORY_API_KEY"),
    Kind("square", cat("EAAA", r(B64URL, 60)), "SQUARE_ACCESS_TOKEN"),
    Kind("square_oauth", cat("sq0csp-", r(B64URL, 43)), "SQUARE_APP_SECRET"),
    Kind("alibaba", cat("LTAI", r(ALNUM, 20)), "ALIBABA_CLOUD_ACCESS_KEY_ID"),
    Kind("twilio_key", cat("SK", r(HEX, 32)), "TWILIO_API_KEY"),
    Kind(
        "azure_ad_secret",
        cat(r(ALNUM, 3), r(string.digits, 1), "Q~", r(ALNUM + "_~.-", 34)),
        "AZURE_CLIENT_SECRET",
    ),
    Kind("facebook_token", cat("EAACEdEose0cBA", r(ALNUM, 150)), "FACEBOOK_ACCESS_TOKEN"),
    Kind(
        "discord_bot",
        cat("M", r(B64URL, 25), ".", r(B64URL, 6), ".", r(B64URL, 38)),
        "DISCORD_BOT_TOKEN",
    ),
    Kind("heroku", cat("HRKU-AA", r(B64URL, 58)), "HEROKU_API_KEY"),
    Kind(
        "onepassword_sa",
        cat("ops_eyJzaWduSW5BZGRyZXNzIjoi", r(B64URL, 240)),
        "OP_SERVICE_ACCOUNT_TOKEN",
    ),
    Kind(
        "onepassword_secret_key",
        cat(
            "A3-",
            r(UPPER_ALNUM, 6),
            "-",
            r(UPPER_ALNUM, 6),
            "-",
            r(UPPER_ALNUM, 5),
            "-",
            r(UPPER_ALNUM, 5),
            "-",
            r(UPPER_ALNUM, 5),
            "-",
            r(UPPER_ALNUM, 5),
        ),
        "OP_SECRET_KEY",
    ),
    Kind("airtable_pat", cat("pat", r(ALNUM, 14), ".", r(HEX, 64)), "AIRTABLE_API_KEY"),
    Kind("databricks", cat("dapi", r(HEX, 32)), "DATABRICKS_TOKEN"),
    Kind("jwt", _jwt_like, "AUTH_TOKEN"),
    Kind("grafana_cloud", cat("glc_eyJvIjoi", r(B64URL, 100)), "GRAFANA_CLOUD_TOKEN"),
    Kind("mapbox", cat("sk.eyJ1Ijoi", r(B64URL, 50), ".", r(B64URL, 22)), "MAPBOX_SECRET_TOKEN"),
    Kind("dropbox", cat("sl.", r(B64URL, 135)), "DROPBOX_ACCESS_TOKEN"),
    Kind("clickup", cat("pk_", r(string.digits, 8), "_", r(UPPER_ALNUM, 32)), "CLICKUP_API_KEY"),
    Kind(
        "asana",
        cat("2/", r(string.digits, 16), "/", r(string.digits, 16), ":", r(HEX, 32)),
        "ASANA_PAT",
    ),
    Kind("frameio", cat("fio-u-", r(B64URL, 64)), "FRAMEIO_TOKEN"),
    Kind("typeform", cat("tfp_", r(B64URL, 44), "_", r(B64URL, 14)), "TYPEFORM_TOKEN"),
    Kind("vercel", cat("vcp_", r(ALNUM, 56)), "VERCEL_TOKEN"),
    Kind("cloudflare_origin_ca", cat("v1.0-", r(HEX, 24), "-", r(HEX, 146)), "CF_ORIGIN_CA_KEY"),
    Kind(
        "django",
        cat("django-insecure-", r(string.ascii_lowercase + string.digits + "!@#%^&*(-_=+)", 50)),
        "DJANGO_SECRET_KEY",
    ),
    Kind("salesforce", cat("00D", r(ALNUM, 12), "!", r(ALNUM + "._", 96)), "SF_ACCESS_TOKEN"),
    Kind("clojars", cat("CLOJARS_", r(LOWER_ALNUM, 60)), "CLOJARS_PASSWORD"),
    Kind(
        "flutterwave",
        cat("FLWSECK-", r("abcdefgh0123456789", 32), "-X"),
        "FLW_SECRET_KEY",
    ),
    Kind("gitlab_runner_reg", cat("GR1348941", r(B64URL, 20)), "RUNNER_REGISTRATION_TOKEN"),
    Kind("gitlab_ff_client", cat("glffct-", r(B64URL, 20)), "UNLEASH_INSTANCE_ID"),
    Kind(
        "harness",
        cat("pat.", r(B64URL, 22), ".", r(ALNUM, 24), ".", r(ALNUM, 20)),
        "HARNESS_API_KEY",
    ),
    Kind("intra42", cat("s-s4t2ud-", r(HEX, 64)), "FT_CLIENT_SECRET"),
    Kind("octopus", cat("API-", r(UPPER_ALNUM, 26)), "OCTOPUS_API_KEY"),
    Kind("sendinblue", cat("xkeysib-", r(HEX, 64), "-", r(ALNUM, 16)), "BREVO_API_KEY"),
    Kind("settlemint", cat("sm_pat_", r(ALNUM, 16)), "SETTLEMINT_ACCESS_TOKEN"),
    Kind("shippo", cat("shippo_live_", r(HEX, 40)), "SHIPPO_API_TOKEN"),
    Kind("slack_config_refresh", cat("xoxe-1-", r(UPPER_ALNUM, 146)), "SLACK_CONFIG_REFRESH"),
    Kind("sourcegraph", cat("sgp_", r(HEX, 16), "_", r(HEX, 40)), "SRC_ACCESS_TOKEN"),
    Kind("newrelic_browser", cat("NRJS-", r(HEX, 19)), "NEW_RELIC_BROWSER_KEY"),
    Kind(
        "hubspot",
        cat("pat-na1-", _uuid),
        "HUBSPOT_ACCESS_TOKEN",
    ),
    Kind("crates_io", cat("cio", r(ALNUM, 32)), "CARGO_REGISTRY_TOKEN"),
    Kind("lob", cat("live_", r(HEX, 35)), "LOB_API_KEY"),
    Kind(
        "plaid",
        cat("access-production-", _uuid),
        "PLAID_ACCESS_TOKEN",
    ),
    Kind("twitter_bearer", cat("A" * 22, r(ALNUM, 90)), "TWITTER_BEARER_TOKEN"),
    Kind("yandex_iam", cat("t1.", r(B64URL, 40), ".", r(B64URL, 86)), "YC_IAM_TOKEN"),
    Kind(
        "aws_a3t",
        cat("A3T", r(UPPER_ALNUM, 1), r("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)),
        "AWS_ACCESS_KEY_ID",
    ),
    Kind(
        "defined_networking",
        cat("dnkey-", r(UPPER_ALNUM, 26), "-", r(UPPER_ALNUM, 52)),
        "DN_API_KEY",
    ),
    Kind("adobe_client_secret", cat("p8e-", r(HEX, 32)), "ADOBE_CLIENT_SECRET"),
    Kind("langfuse", cat("sk-lf-", _uuid), "LANGFUSE_SECRET_KEY"),
    Kind(
        "tailscale",
        cat("tskey-auth-", r(ALNUM, 7), "CNTRL-", r(ALNUM, 33)),
        "TS_AUTHKEY",
    ),
    Kind(
        "authress",
        cat(
            "sc_",
            r(LOWER_ALNUM, 10),
            ".",
            r(LOWER_ALNUM, 4),
            ".acc_",
            r(LOWER_ALNUM, 10),
            ".",
            r(LOWER_ALNUM, 40),
        ),
        "AUTHRESS_SERVICE_KEY",
    ),
    Kind("bitbucket_app_password", cat("ATBB", r(ALNUM, 32)), "BITBUCKET_APP_PASSWORD"),
    Kind("vault_secret_id", _uuid, "VAULT_SECRET_ID", prefixed=False),
    Kind("rootly", cat("rootly_", r(HEX, 64)), "ROOTLY_API_TOKEN"),
    Kind("neon", cat("napi_", r(LOWER_ALNUM, 60)), "NEON_API_KEY"),
    Kind("cerebras", cat("csk-", r(LOWER_ALNUM, 48)), "CEREBRAS_API_KEY"),
    Kind("paystack", cat("sk_live_", r(LOWER_ALNUM, 40)), "PAYSTACK_SECRET_KEY"),
    Kind("zoho", cat("1000.", r(HEX, 32), ".", r(HEX, 32)), "ZOHO_REFRESH_TOKEN"),
    Kind(
        "facebook_app_token",
        cat(r(string.digits, 16), "%7C", r(ALNUM + "_-", 27)),
        "FB_ACCESS_TOKEN",
    ),
]

# Formats without a prefix: a secret only by the name around it (mostly hex or base64 bodies).
UNNAMED_KINDS: list[Kind] = [
    Kind("wandb", r(HEX, 40), "WANDB_API_KEY", False),
    Kind("azure_openai", r(HEX, 32), "AZURE_OPENAI_API_KEY", False),
    Kind("datadog_api", r(HEX, 32), "DD_API_KEY", False),
    Kind("datadog_app", r(HEX, 40), "DD_APP_KEY", False),
    Kind("aws_secret", r(B64, 40), "AWS_SECRET_ACCESS_KEY", False),
    Kind("azure_storage", cat(r(B64, 86), "=="), "AZURE_STORAGE_KEY", False),
    Kind("cloudflare_api", r(B64URL, 40), "CLOUDFLARE_API_TOKEN", False),
    Kind("mistral", r(ALNUM, 32), "MISTRAL_API_KEY", False),
    Kind("cohere", r(ALNUM, 40), "COHERE_API_KEY", False),
    Kind("algolia_admin", r(HEX, 32), "ALGOLIA_ADMIN_KEY", False),
    Kind("facebook_app_secret", r(HEX, 32), "FACEBOOK_APP_SECRET", False),
    Kind("okta", cat("00", r(B64URL, 40)), "OKTA_API_TOKEN", False),
    Kind("rails_secret", r(HEX, 128), "SECRET_KEY_BASE", False),
    Kind("flask_secret", r(HEX, 48), "FLASK_SECRET_KEY", False),
    Kind("twilio_auth", r(HEX, 32), "TWILIO_AUTH_TOKEN", False),
    Kind("azure_devops_pat", r("abcdefghijklmnopqrstuvwxyz234567", 52), "AZURE_DEVOPS_PAT", False),
    # lowercase bodies with "_" in them (Adafruit IO, Beamer, RapidAPI keys): not snake_case names
    Kind(
        "adafruit",
        cat("aio_", r(LOWER_ALNUM, 12), "_", r(LOWER_ALNUM, 15)),
        "ADAFRUIT_IO_KEY",
        False,
    ),
    Kind("rapidapi", cat(r(LOWER_ALNUM, 24), "_", r(LOWER_ALNUM, 25)), "RAPIDAPI_KEY", False),
    Kind(
        "db_password",
        cat(r(LETTERS, 6), r(string.digits, 2), "-", r(ALNUM, 10)),
        "DB_PASSWORD",
        False,
    ),
    Kind(
        "password_symbols",
        cat(r(LETTERS, 5), "#", r(string.digits, 3), "!", r(LETTERS, 4)),
        "POSTGRES_PASSWORD",
        False,
    ),
]


def _one_digit_inside(prefix: str, before: int, after: int) -> Gen:
    """A prefix, then lowercase letters with one digit among them, as scanners' samples write
    tokens whose body alone looks like no random string."""
    return cat(
        prefix,
        r(string.ascii_lowercase, before),
        r(string.digits, 1),
        r(string.ascii_lowercase, after),
    )


# Formats added after the others: drawn last, so the values of the cases above stay as they were.
LATER_KINDS: list[Kind] = [
    # ("sdk-<uuid>" alone is as often a trace's or a workspace's id: a secret by its name only)
    Kind("launchdarkly", cat("sdk-", _uuid), "LAUNCHDARKLY_SDK_KEY", prefixed=False),
    Kind("tableau_pat", cat(r(B64, 22), "==:", r(ALNUM, 32)), "TABLEAU_PAT_SECRET"),
    Kind("jenkins_secret", cat("{AQAAABAAAAAQ", r(B64, 64), "=}"), "JENKINS_API_TOKEN"),
    Kind("duffel", cat("duffel_live_", r(B64URL, 43)), "DUFFEL_API_TOKEN"),
    # values whose prefix is a secret's own name ("secret_...", "token_...", "sm_pat_..."): no
    # variable is named with a random tail
    Kind("secret_prefixed", cat("secret_", r(ALNUM, 16)), "CLIENT_SECRET", False),
    Kind("token_prefixed", _one_digit_inside("token_", 9, 6), "AUTH_TOKEN", False),
    # a token of lowercase and digits whose prefix holds a secret's name ("pat": "sm_pat_...")
    Kind("settlemint_lower", _one_digit_inside("sm_pat_", 6, 9), "SETTLEMINT_TOKEN"),
    # Asana's older personal access token: "0/" or "1/", the user's id, ":", 32 characters
    Kind(
        "asana_old",
        cat("1/", r(string.digits, 16), ":", r(ALNUM, 32)),
        "ASANA_ACCESS_TOKEN",
    ),
    Kind(
        "airtable_oauth",
        cat("oaa", r(ALNUM, 14), ".v1.", r(B64URL, 120), ".", r(HEX, 64)),
        "AIRTABLE_OAUTH_TOKEN",
    ),
    # a dotted token with a short segment inside (Paperform's): the chain goes through it
    Kind(
        "dotted_short_segment",
        cat(r(ALNUM, 24), ".", r(ALNUM, 18), ".", r(ALNUM, 2), ".", r(ALNUM, 60)),
        "PAPERFORM_TOKEN",
    ),
    # "pass" after what owns the password (db_pass, --smtp-pass): a password, where a code's
    # first_pass is a step of an algorithm
    Kind(
        "smtp_pass",
        cat(r(LETTERS, 4), r(string.digits, 2), "!", r(LETTERS, 3)),
        "SMTP_PASS",
        False,
    ),
    # a random mixed-case body with no digit in it (one 24-character body in 70 is drawn so)
    Kind("stripe_letters", cat("sk_live_", r(LETTERS, 24)), "STRIPE_SECRET_KEY"),
    Kind("github_letters", cat("ghp_", r(LETTERS, 36)), "GITHUB_TOKEN"),
]

ALL_KINDS = KINDS + UNNAMED_KINDS + LATER_KINDS

_ZW = "\u200b"


def fullwidth(s: str) -> str:
    """`s` in full-width forms (U+FF01..U+FF5E), as some IMEs and PDFs paste it."""
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in s)


@dataclass
class Case:
    """One leak: the messages that carry it (one, or two for a split key), the secret as the
    provider issued it, and the pieces of it that must not be stored."""

    kind: str
    context: str
    messages: list[str]
    secret: str
    needles: list[str] = field(default_factory=list)
    channel: str = "user"  # user or assistant message, tool output (stack traces, files), command


def _named_contexts(k: Kind, v: str) -> Iterator[tuple[str, str, str]]:
    env = k.env
    low = env.lower()
    yield "env_line", f"cat .env\n{env}={v}\nDEBUG=false", "tool"
    yield "export", f"export {env}={v} && npm run dev", "command"
    yield "json_config", f'{{\n  "{low}": "{v}",\n  "region": "eu-west-1"\n}}', "tool"
    yield "yaml_config", f"services:\n  api:\n    environment:\n      {env}: {v}\n", "tool"
    yield "python_environ", f'os.environ["{env}"] = "{v}"', "user"
    yield "cli_flag", f"deploy --{low.replace('_', '-')} {v} --region eu-west-1", "command"
    yield "call_pair", f"define('{env}', '{v}');", "tool"
    # the same name as a variable of code, in the forms scanners' fixtures write it
    parts = low.split("_")
    camel = parts[0] + "".join(p.title() for p in parts[1:])
    yield "php_variable", f'${camel} = "{v}";', "tool"
    yield "perl_my", f'my ${low} = "{v}";', "tool"
    yield "go_typed_var", f'var {camel} string = "{v}"', "tool"
    yield "ts_typed_const", f'export const {camel}: string = "{v}";', "tool"
    yield "rust_typed_let", f'let {low}: &str = "{v}";', "tool"
    yield "kotlin_typed_val", f'private val {camel}: String = "{v}"', "tool"
    yield "r_assign", f'{low} <- "{v}"', "tool"
    yield "clojure_def", f'(def {low.replace("_", "-")} "{v}")', "tool"
    yield "makefile_default", f"{env} ?= {v}", "tool"
    yield "c_array", f'static const char {env}[] = "{v}";', "tool"
    yield "c_define", f'#define {env} "{v}"', "tool"
    yield "objc_string", f'NSString *{camel} = @"{v}";', "tool"
    yield "vb_dim", f'Dim {camel} As String = "{v}"', "tool"
    # the environment set from a script or another shell
    yield "fish_set", f"set -gx {env} {v}", "command"
    yield "windows_setx", f"setx {env} {v}", "command"
    if "TOKEN" in env:
        yield "npm_config_set", f"npm config set //npm.example.com/:_authToken {v}", "command"
        # poetry's settings name the repository the token is for
        yield "poetry_pypi_token", f"poetry config pypi-token.private {v}", "command"
    yield "csh_setenv", f"setenv {env} {v}", "command"
    # PowerShell's secure string made from a literal
    yield (
        "powershell_secure_string",
        f"${camel} = ConvertTo-SecureString '{v}' -AsPlainText -Force",
        "command",
    )
    # a command line tool's settings: `aws configure set NAME value`, `<tool> config set ...`
    verb = "configure" if parts[0] == "aws" else "config"
    yield "config_set", f"{parts[0]} {verb} set {low} {v} --profile ci", "command"
    if "PASS" in env:
        # commands that take only a password: an encryption's, an archive's
        yield (
            "openssl_k",
            f"openssl enc -aes-256-cbc -salt -k {v} -in db.tar -out db.enc",
            "command",
        )
        yield "zip_password", f"zip -r -P {v} backup.zip data/", "command"
        # (the flag last in a cluster of zip's one-letter options)
        yield "zip_cluster", f"zip -9rP {v} backup.zip data/", "command"
        yield "7z_password", f"7z a -p{v} -mhe=on backup.7z data/", "command"
        # htpasswd's batch mode: the password after the file and the user
        yield "htpasswd_batch", f"htpasswd -b -c /etc/nginx/.htpasswd admin {v}", "command"
        # a file share's user and password: Samba's -U user%password, Windows' net use
        yield "smbclient_user", f"smbclient //fs01/backup -U svc_backup%{v} -c 'ls'", "command"
        yield (
            "net_use",
            f"net use Z: \\\\fs01\\backup /user:CORP\\svc_backup {v} /persistent:no",
            "command",
        )
        # a Windows account's password after its name: net user NAME PASSWORD /add
        yield "net_user", f"net user svc_backup {v} /add /domain", "command"
        # poetry's credentials for a package repository: the user, then the password
        yield "poetry_http_basic", f"poetry config http-basic.private ci {v}", "command"
        # MySQL's SET PASSWORD for an account named before the value
        yield (
            "sql_set_password",
            f"mysql -e \"SET PASSWORD FOR 'app'@'localhost' = '{v}'\"",
            "command",
        )
        # a database account's password set in SQL: PostgreSQL's PASSWORD '...', MySQL's
        # IDENTIFIED BY '...'
        yield (
            "sql_with_password",
            f"psql -c \"ALTER ROLE app WITH LOGIN PASSWORD '{v}'\"",
            "command",
        )
        yield (
            "sql_identified_by",
            f"-- 002_users.sql\nCREATE USER 'app'@'%' IDENTIFIED BY '{v}';\n"
            "GRANT ALL ON app.* TO 'app'@'%';",
            "tool",
        )
    # a secret store's command line: the value after gh's --body or -b (its four spellings, one
    # per name in turn)
    body = ("--body {}", '--body "{}"', '-b"{}"', "-b {}")[sum(map(ord, env)) % 4]
    yield "gh_secret_body", f"gh secret set {env} {body.format(v)} --repo acme/api", "command"
    # the value piped into a secret store that reads its standard input (one store per name)
    piped = (
        "echo {v} | npx wrangler secret put {env}",
        "echo -n '{v}' | gh secret set {env}",
        "printf '%s' \"{v}\" | vercel env add {env} production",
    )[sum(map(ord, env)) % 3]
    yield "piped_secret_store", piped.format(v=v, env=env), "command"
    # fly reads NAME=VALUE lines from its standard input
    yield "fly_secrets_import", f'echo "{env}={v}" | fly secrets import -a api', "command"
    yield "perl_env", f"$ENV{{{env}}} = '{v}';", "tool"
    yield "ruby_env_default", f'ENV["{env}"] ||= "{v}"', "tool"
    yield "rust_string_from", f'let {low}: String = String::from("{v}");', "tool"
    yield "rust_untyped_from", f'let {low} = SecretString::from("{v}");', "tool"
    yield "make_immediate", f"{env} ::= {v}", "tool"
    yield "make_quoted", f'{env} ?= "{v}"', "tool"
    yield "php_concat", f'${camel} .= "{v}";', "tool"
    yield "append_assign", f'{env} += "{v}"', "tool"
    yield "csv_row", f"name,value\n{camel},{v},\nregion,eu-west-1", "tool"
    yield "yaml_block", f"deploy:\n  {low}: |\n    {v}\n  region: eu-west-1\n", "tool"
    yield "yaml_folded", f"{low}: >-\n  {v}\n", "tool"
    # an anchor before the value, its alias reusing it further down
    yield (
        "yaml_anchor",
        f"production:\n  {low}: &{camel} {v}\nreplica:\n  {low}: *{camel}\n",
        "tool",
    )
    # a YAML tag before the value (a core tag: !!str, not a local one such as !secret)
    yield "yaml_tag", f"production:\n  {low}: !!str {v}\n  region: eu-west-1\n", "tool"
    yield "xml_element", f"<settings>\n  <{camel}>\n    {v}\n  </{camel}>\n</settings>", "tool"
    # the form of the scanners' fixture lines and of notes: "twilio token - '...'"
    word = "password" if "PASS" in env else "token"
    yield "dash_quoted", f"{parts[0]} {word} - '{v}'", "user"
    # quoted right after the name in words, no "is" between, typed or typographic quotes
    yield "quoted_after_name", f'use the {parts[0]} {word} "{v}" for staging', "user"
    yield "smart_quoted_after_name", f"the {word} \u2018{v}\u2019 is for staging only", "user"
    # a table an agent writes of the settings, and a pasted table of variables
    yield (
        "markdown_table",
        f"| Variable | Value |\n|---|---|\n| `{env}` | `{v}` |\n| `REGION` | `eu-west-1` |",
        "assistant",
    )
    # JSON inside a string: a request body in a shell command, a payload in a log line
    yield "escaped_json", f'curl -d "{{\\"user\\":\\"ci\\",\\"{low}\\":\\"{v}\\"}}" $URL', "command"
    yield (
        "variables_table",
        f"Variable name | Initial Value\n{camel} |{v}\nbaseUrl |https://api.example.com",
        "user",
    )


def _unnamed_contexts(v: str) -> Iterator[tuple[str, str, str]]:
    yield "chat", f"here is the key {v} can you check why the call fails", "user"
    yield "chat_colon", f"use this one: {v}", "user"
    yield (
        "stack_trace",
        'Traceback (most recent call last):\n  File "/srv/app/client.py", line 41, in connect\n'
        f'    raise AuthError(f"rejected credential {v}")\nAuthError: rejected credential {v}',
        "tool",
    )
    yield "log_line", f"2026-03-02T10:11:12Z WARN retrying with {v} after 401", "tool"
    yield "url_query", f"curl 'https://api.example.io/v2/items?limit=5&key={v}'", "command"


def cases(seed: int = 19) -> list[Case]:
    """Every secret kind in every context that fits it."""
    rng = random.Random(seed)
    out: list[Case] = []
    for k in KINDS + UNNAMED_KINDS:
        out.extend(_kind_cases(k, rng))
    out.extend(_named_leaks(rng))
    for k in LATER_KINDS:
        out.extend(_kind_cases(k, rng))
    out.extend(_joined_pieces(rng))
    out.extend(_curl_user_forms(rng))
    out.extend(_passphrases(rng))
    return out


_PHRASE_WORDS = [
    "orbit",
    "maple",
    "quartz",
    "lantern",
    "violet",
    "ember",
    "cobalt",
    "meadow",
    "falcon",
    "tundra",
    "harbor",
    "willow",
    "copper",
    "saddle",
    "pepper",
    "glacier",
    "thistle",
    "canyon",
    "marble",
    "nectar",
]


def _passphrases(rng: random.Random) -> list[Case]:
    """A passphrase of words (diceware's way) quoted after a password's name in words, typed and
    typographic, and anything quoted after "passphrase"."""
    out = []
    for ctx, fmt in (
        ("phrase_after_password", 'the staging password "{v}" still works'),
        ("phrase_after_passwd", "log in with passwd '{v}' on the box"),
        ("phrase_smart_quoted", "the vault password \u201c{v}\u201d is in 1password"),
        ("phrase_after_passphrase", "the key's passphrase \u2018{v}!\u2019 unlocks it"),
    ):
        v = " ".join(rng.choice(_PHRASE_WORDS) for _ in range(4))
        secret = v + "!" if ctx == "phrase_after_passphrase" else v
        out.append(Case("passphrase", ctx, [fmt.format(v=v)], secret, [secret], "user"))
    return out


def _curl_user_forms(rng: random.Random) -> list[Case]:
    """``curl -u``'s other spellings: the password quoted after the user, no user (a token
    after ":"), and an API key given as the user with no password (Stripe's way)."""
    pw = cat(r(LETTERS, 5), r(string.digits, 2), "!", r(ALNUM, 6))
    out = []
    for ctx, fmt in (
        ("quoted_password", "curl --user kevin:'{v}' -X PATCH https://api.corp.io/v1/me"),
        ("no_user", 'curl -u ":{v}" https://localhost:9200/_cat/indices'),
        ("key_as_user", 'curl -u "{v}:" https://api.corp.io/v1/charges'),
    ):
        v = pw(rng)
        out.append(Case("curl_user", ctx, [fmt.format(v=v)], v, [v], "command"))
    return out


def _joined_pieces(rng: random.Random) -> list[Case]:
    """Random values that "=" joins (two base64 values, a generated key with "=" inside) and a
    secret in Jenkins' XML as the scanners' fixtures write it: every piece is secret."""
    out = []
    for sep in ("=", "=="):
        a, b, c = r(ALNUM, 40)(rng), r(ALNUM, 12)(rng), r(ALNUM, 9)(rng)
        v = f"{a}{sep}{b}{sep}{c}"
        text = f"here is the key {v} can you check it"
        out.append(Case("joined_base64", f"chat{sep}", [text], v, [v, a, b, c], "user"))
    v = r(LOWER_ALNUM, 32)(rng)
    text = f"<credentials>\n  <id>ci</id>\n  <secret>{{AQAAABAAA {v}}}</secret>\n</credentials>"
    out.append(Case("jenkins_fixture", "xml", [text], v, [v], "tool"))
    return out


def _kind_cases(k: Kind, rng: random.Random) -> list[Case]:
    """One kind's value in every context that fits it."""
    out: list[Case] = []
    v = k.gen(rng)
    for ctx, text, channel in _named_contexts(k, v):
        out.append(Case(k.name, ctx, [text], v, [v], channel))
    b64 = base64.b64encode(v.encode()).decode()
    manifest = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app\ntype: Opaque\ndata:\n"
    out.append(
        Case(k.name, "k8s_secret_data", [f"{manifest}  config: {b64}\n"], b64, [b64], "tool")
    )
    if not k.prefixed:
        return out
    v2 = k.gen(rng)
    for ctx, text, channel in _unnamed_contexts(v2):
        out.append(Case(k.name, ctx, [text], v2, [v2], channel))
    v3 = k.gen(rng)
    out.append(
        Case(
            k.name,
            "fullwidth",
            [f"my key is {fullwidth(v3)} please test"],
            v3,
            [v3, fullwidth(v3)],
        )
    )
    v4 = k.gen(rng)
    mid = len(v4) // 2
    zw = v4[:mid] + _ZW + v4[mid:]
    out.append(Case(k.name, "zero_width", [f"try {zw} now"], v4, [v4, zw]))
    v5 = k.gen(rng)
    mid = len(v5) // 2
    a, b = v5[:mid], v5[mid:]
    out.append(Case(k.name, "split", [f"the token is {a}", f"{b}"], v5, [v5, a, b]))
    return out


def _named_leaks(rng: random.Random) -> list[Case]:
    """Values a name makes secret in shapes that used to slip through (issue 19's list)."""
    pw = cat(r(LETTERS, 5), r(string.digits, 2), r(LETTERS, 4), r(string.digits, 2))
    shapes = [
        ("environ_password", lambda v: f'os.environ["DB_PASSWORD"] = "{v}"'),
        ("auth_token_flag", lambda v: f"sentry-cli releases new --auth-token {v} 1.2.3"),
        ("dollar_value", lambda v: f"DB_PASSWORD=${v}"),
        ("brace_value", lambda v: f'password = "{{{v}}}"'),
        ("xml_add_key", lambda v: f'<add key="Password" value="{v}"/>'),
        (
            "api_token_header",
            lambda v: f"curl -H 'Authorization: Api-Token {v}' https://x.live.dynatrace.com/api",
        ),
        (
            "ldapsearch",
            lambda v: f"ldapsearch -x -D cn=admin,dc=corp,dc=io -w {v} -b dc=corp,dc=io",
        ),
        (
            "azure_sas",
            lambda v: (
                f"https://acct.blob.core.windows.net/c/b.txt?sv=2022-11-02&se=2026-01-01&sr=b&sp=r&sig={v}"
            ),
        ),
        ("sentence_password", lambda v: f"no, don't put the db password {v} in the Makefile"),
        ("connection_string", lambda v: f"Server=db.corp;Database=app;User Id=sa;Password={v};"),
        ("url_password", lambda v: f"postgres://app:{v}@db.internal:5432/app"),
        ("docker_login", lambda v: f"docker login -u ci -p {v} registry.corp.io"),
        ("mysql_attached", lambda v: f"mysql -uroot -p{v} app < dump.sql"),
        ("yaml_password", lambda v: f"spring:\n  datasource:\n    password: {v}\n"),
        ("ini_password", lambda v: f"[client]\npassword = {v}\n"),
        ("kwarg_password", lambda v: f'conn = psycopg.connect(host="db", password="{v}")'),
        ("netrc", lambda v: f"machine api.corp.io login ci password {v}"),
        ("npmrc", lambda v: f"//registry.npmjs.org/:_authToken={v}"),
        ("env_bracket_password", lambda v: f"cat .env\nDB_PASSWORD={v}\nDEBUG=false"),
        # a vendor's key in code and config: often hex or lowercase, under a `<vendor>_key` name
        ("vendor_key_hex", lambda v: f'etsy_key = "{v}"'),
        ("php_vendor_key_hex", lambda v: f'$flickrKey = "{v}";'),
        ("yaml_vendor_key", lambda v: f"twitch:\n  client-key: {v}\n"),
        ("env_vendor_key_hex", lambda v: f"BITTREX_KEY={v}"),
        ("config_pass", lambda v: f"smtp_host: mail.corp.io\nsmtp_pass: {v}\n"),
        ("bundler_source", lambda v: f"export BUNDLE_ENTERPRISE__CONTRIBSYS__COM=cafebabe:{v}"),
        # a random value that holds "pw" or "pat" is no secret-named identifier
        ("random_with_pw", lambda v: f"stripe_key: c9gm1gxspjetvx6pw{v}"),
        ("random_with_pat", lambda v: f"api_token: q7pat9x2mc4zr{v}"),
        ("ts_optional_field", lambda v: f'public clientSecret?: string = "{v}";'),
        ("csharp_property", lambda v: f'public string ApiKey {{ get; set; }} = "{v}";'),
        ("clojure_meta_def", lambda v: f'(def ^:private api-token "{v}")'),
        ("elixir_attribute", lambda v: f'@api_token "{v}"'),
        ("rust_bytes", lambda v: f'const API_KEY: &[u8] = b"{v}";'),
        ("lisp_def_next_line", lambda v: f'(def api-token\n  "{v}")'),
        # a log line naming the key bare, lowercase random as many vendors issue them
        ("log_bare_key", lambda v: f"[DEBUG] Using Key={v}\n[INFO] Response received: 200 OK"),
        ("bare_key_spaced", lambda v: f"[DEBUG] using key = {v}"),
        # a token of random segments joined by dots, given alone: every segment goes
        ("dotted_segments", lambda v: f"the export link is signed with {v} until Friday"),
        # a bare key's value of base64 pieces joined by = or a dot (a vendor's key in a log)
        ("log_bare_key_joined", lambda v: f"[DEBUG] Using Key={v}\n[INFO] Response received: 200"),
        ("log_bare_key_dotted", lambda v: f"[DEBUG] Using Key={v}\n[INFO] Response received: 200"),
        # a real key's head before a run of zeros; a password of one letter in two cases
        ("zeros_after_a_head", lambda v: f"SECRET_KEY={v}0000000000000000"),
        ("one_letter_two_cases", lambda v: f"DB_PASSWORD={v}"),
        # a connection string given to a token's or a key's name: its password under its own
        (
            "token_connection_string",
            lambda v: f"db_token = 'Server=db.corp;Database=app;User Id=sa;Password={v};'",
        ),
    ]
    out = []
    for name, fmt in shapes:
        if name == "azure_sas":
            v = r(B64, 43)(rng) + "%3D"
        elif name == "env_bracket_password":
            v = cat(r("[]{}()<>", 9), r(string.digits, 2))(rng)
        elif name in ("api_token_header", "npmrc"):
            v = r(ALNUM, 32)(rng)
        elif name.startswith("random_with_"):
            v = r(LOWER_ALNUM, 16)(rng)
        elif name.endswith("_hex"):
            v = r(HEX, 32)(rng)
        elif name == "dotted_segments":
            v = cat(r(ALNUM, 18), ".", r(ALNUM, 40), ".", r(ALNUM, 14))(rng)
        elif name == "zeros_after_a_head":
            v = r(ALNUM, 24)(rng)
        elif name == "one_letter_two_cases":
            v = cat(r(string.ascii_uppercase, 1), "qqqqqqq")(rng)
        elif name == "log_bare_key_joined":
            v = cat(r(ALNUM, 16), "=", r(ALNUM, 18))(rng)
        elif name == "log_bare_key_dotted":
            v = cat(r(UPPER_ALNUM, 16), ".", r(UPPER_ALNUM, 7), "-", r(UPPER_ALNUM, 7))(rng)
        elif name in ("log_bare_key", "bare_key_spaced"):
            v = r(LOWER_ALNUM, 40)(rng)
        elif name == "yaml_vendor_key":
            v = r(LOWER_ALNUM, 24)(rng)
        else:
            v = pw(rng)
        # (a dotted token leaks by any of its segments)
        needles = v.split(".") if name == "dotted_segments" else [v]
        out.append(Case(name, "named", [fmt(v)], v, needles, "user"))
    return out


# Not secrets: they must come out unchanged. (context, the string that must survive)
LOOKALIKES: list[tuple[str, str]] = [
    # documented examples, defaults and public keys (the scanners' own false positives)
    ("AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    ("STRIPE_PUBLISHABLE_KEY=pk_test_TYooMQauvdEDq54NiTphI7jx", "pk_test_TYooMQauvdEDq54NiTphI7jx"),
    ("POSTGRES_PASSWORD=postgres", "POSTGRES_PASSWORD=postgres"),
    ("password: example-password", "example-password"),
    ("timeout on API-GATEWAY-REQUEST-FAILED-UPSTREAM", "API-GATEWAY-REQUEST-FAILED-UPSTREAM"),
    ("aws ec2 run-instances --instance-type t1.micro", "t1.micro"),
    ("cioPipelineConfigurationLoaderImpl failed", "cioPipelineConfigurationLoaderImpl"),
    ("set live_reload_interval_ms=500 in dev", "live_reload_interval_ms=500"),
    ("sessionId: 3f2b8c1e-9d4a-4f6b-8e2a-1c7d9b0e5f3a", "3f2b8c1e-9d4a-4f6b-8e2a-1c7d9b0e5f3a"),
    (
        "request 6ba7b810-9dad-11d1-80b4-00c04fd430c8 timed out",
        "6ba7b810-9dad-11d1-80b4-00c04fd430c8",
    ),
    (
        '"session_id": "a1b2c3d4-e5f6-4789-abcd-ef0123456789"',
        "a1b2c3d4-e5f6-4789-abcd-ef0123456789",
    ),
    (
        "commit 9fceb02d0ae598e95dc970b74767f19372d61af8 fixed it",
        "9fceb02d0ae598e95dc970b74767f19372d61af8",
    ),
    (
        "git checkout 4b825dc642cb6eb9a060e54bf8d69288fbee4904",
        "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
    ),
    (
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    ),
    (
        "integrity sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg==",
        "z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg==",
    ),
    ("API_KEY={{ .Values.apiKey }}", "{{ .Values.apiKey }}"),
    ("OPENAI_API_KEY=${OPENAI_API_KEY}", "${OPENAI_API_KEY}"),
    ("token: ${{ secrets.GITHUB_TOKEN }}", "${{ secrets.GITHUB_TOKEN }}"),
    ("password: <your-password-here>", "<your-password-here>"),
    ("export API_KEY=your_api_key_here", "your_api_key_here"),
    (
        "open /home/dev/projects/reos/src/handlers/authTokenRefresher.ts",
        "/home/dev/projects/reos/src/handlers/authTokenRefresher.ts",
    ),
    (
        "see internal/paths/RepoRootResolverForWorktrees.go",
        "internal/paths/RepoRootResolverForWorktrees.go",
    ),
    ("run mise run test:integration before pushing", "mise run test:integration"),
    ("decoder.DisallowUnknownFields() rejects extra keys", "DisallowUnknownFields"),
    ("root := paths.RepoRoot() returns the checkout", "paths.RepoRoot()"),
    (
        "AbstractSingletonProxyFactoryBeanConfigurationProvider is too long",
        "AbstractSingletonProxyFactoryBeanConfigurationProvider",
    ),
    (
        "TestCheckoutWorktreeResolvesCommonGitDirectory2 failed",
        "TestCheckoutWorktreeResolvesCommonGitDirectory2",
    ),
    (
        "docs at https://docs.github.com/en/rest/authentication/authenticating-to-the-rest-api",
        "https://docs.github.com/en/rest/authentication/authenticating-to-the-rest-api",
    ),
    (
        "fetch https://pkg.go.dev/golang.org/x/tools@v0.21.0/go/analysis",
        "https://pkg.go.dev/golang.org/x/tools@v0.21.0/go/analysis",
    ),
    ("image ghcr.io/acme/api:v2.14.3-alpine3.19", "ghcr.io/acme/api:v2.14.3-alpine3.19"),
    ("model Qwen/Qwen3-Next-80B-A3B-Instruct loaded", "Qwen/Qwen3-Next-80B-A3B-Instruct"),
    ("pip install types-requests==2.31.0.20240406", "types-requests==2.31.0.20240406"),
    ("max_tokens=4096 and pad_token=eos", "max_tokens=4096"),
    ("the token_type is bearer", "token_type"),
    ("PASSWORD_MIN_LENGTH=12", "PASSWORD_MIN_LENGTH=12"),
    (
        "set GOOGLE_APPLICATION_CREDENTIALS=/etc/keys/service-account.json",
        "/etc/keys/service-account.json",
    ),
    ("password = getpass.getpass()", "getpass.getpass()"),
    ("token = os.environ['GITHUB_TOKEN']", "os.environ['GITHUB_TOKEN']"),
    # a code's "pass" is a step of an algorithm
    ("first_pass = run_pass(graph)", "first_pass = run_pass(graph)"),
    ("backward_pass=compute_grads(loss_fn)", "backward_pass=compute_grads(loss_fn)"),
    # tables that describe secrets without holding one
    ("| `password` | bcrypt |", "| `password` | bcrypt |"),
    ("| token | string | The access token |", "| token | string | The access token |"),
    ("| API_KEY | `${{ secrets.API_KEY }}` |", "${{ secrets.API_KEY }}"),
    # a variable that names a secret, given as the value: code, not a literal
    ("client_secret=client_secret_v2, timeout=30", "client_secret_v2"),
    ("f(api_token=stripe_api_token_live)", "stripe_api_token_live"),
    ("api_key = settings.OPENAI_API_KEY", "settings.OPENAI_API_KEY"),
    (
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGp2mBEs6z1Kq3dQ7wzKx8Lr0yTnU5vHc2JfW9aPb4Ro dev@laptop",
        "AAAAC3NzaC1lZDI1NTE5AAAAIGp2mBEs6z1Kq3dQ7wzKx8Lr0yTnU5vHc2JfW9aPb4Ro",
    ),
    (
        "go.sum: h1:4Qe3vmn8tPmQ9NBq0rvOFAtrEYeObCc2yD4H0pBzr+8=",
        "h1:4Qe3vmn8tPmQ9NBq0rvOFAtrEYeObCc2yD4H0pBzr+8=",
    ),
    ("the CSS class is .btn-primary-outline-lg-hover", ".btn-primary-outline-lg-hover"),
    ("k8s pod api-7d9f8b6c5d-x2k4p restarted", "api-7d9f8b6c5d-x2k4p"),
    ("build id 20260311-1423-release-candidate-7", "20260311-1423-release-candidate-7"),
    (
        "python -m pytest tests/test_checkout_worktree_common_dir.py::test_resolves -x",
        "tests/test_checkout_worktree_common_dir.py::test_resolves",
    ),
    ("npm run build:production:analyze", "build:production:analyze"),
    (
        "func (s *Server) HandleGetTaskContextWithBudget(ctx context.Context)",
        "HandleGetTaskContextWithBudget",
    ),
    ("const useAuthTokenRefreshInterval = 30_000", "useAuthTokenRefreshInterval"),
    ("docker run -p 5432:5432 postgres:16-alpine", "postgres:16-alpine"),
    (
        "ERROR 1045 (28000): Access denied for user 'root'@'localhost' (using password: YES)",
        "(using password: YES)",
    ),
    (
        "base64 of hello: aGVsbG8gd29ybGQgdGhpcyBpcyBwbGFpbiB0ZXh0IG9ubHk=",
        "aGVsbG8gd29ybGQgdGhpcyBpcyBwbGFpbiB0ZXh0IG9ubHk=",
    ),
    (
        "the error says ENOENT: no such file or directory, open '/tmp/x'",
        "ENOENT: no such file or directory",
    ),
    ("the secret_key_base is read from config/credentials.yml.enc", "config/credentials.yml.enc"),
    (
        "curl https://api.github.com/repos/acme/api/pulls?state=open&per_page=100",
        "https://api.github.com/repos/acme/api/pulls?state=open&per_page=100",
    ),
    ("object id 507f1f77bcf86cd799439011 not found", "507f1f77bcf86cd799439011"),
    ("md5 d41d8cd98f00b204e9800998ecf8427e matches", "d41d8cd98f00b204e9800998ecf8427e"),
    ("ULID 01ARZ3NDEKTSV4RRFFQ69G5FAV was created", "01ARZ3NDEKTSV4RRFFQ69G5FAV"),
    ("color #3b82f6 and #1e40af", "#3b82f6"),
    ("version 1.2.3-beta.4+build.5678", "1.2.3-beta.4+build.5678"),
    (
        "Use `mix test test/spotter_web/live/project_review_live_test.exs:42`",
        "test/spotter_web/live/project_review_live_test.exs:42",
    ),
    ("tool_use id toolu_01FdQ8qTyVyZjE3Kw4dguQGx returned", "toolu_01FdQ8qTyVyZjE3Kw4dguQGx"),
    ("request_id req_011CY15QS2LGwAeBxdfa6e1V", "req_011CY15QS2LGwAeBxdfa6e1V"),
    ("message msg_01MKH1ccEGrZGNPvu8pYiiQa arrived", "msg_01MKH1ccEGrZGNPvu8pYiiQa"),
    (
        "i18n key errors.validation.passwordTooShortMessage",
        "errors.validation.passwordTooShortMessage",
    ),
    ("JWT_SECRET_FILE=/run/secrets/jwt", "JWT_SECRET_FILE=/run/secrets/jwt"),
    (
        "the function verifyAccessTokenSignatureWithRotatingKeys",
        "verifyAccessTokenSignatureWithRotatingKeys",
    ),
    (
        "onnx model all-MiniLM-L6-v2 at ~/.cache/reos/models/all-MiniLM-L6-v2-onnx-fp32",
        "~/.cache/reos/models/all-MiniLM-L6-v2-onnx-fp32",
    ),
    ("API_KEY=os.environ[OPENAI_KEY_NAME]", "API_KEY=os.environ[OPENAI_KEY_NAME]"),
    (
        "DB_PASSWORD=settings().get(db_password_name)",
        "DB_PASSWORD=settings().get(db_password_name)",
    ),
    ("salesforce org 00D5e000000AbCdEAA is the sandbox!", "00D5e000000AbCdEAA"),
    # declarations and ids of data under a secret-looking name
    (
        'commit_key = "9fceb02d0ae598e95dc970b74767f19372d61af8"',
        "9fceb02d0ae598e95dc970b74767f19372d61af8",
    ),
    (
        "GIT_SHA_KEY=9fceb02d0ae598e95dc970b74767f19372d61af8",
        "9fceb02d0ae598e95dc970b74767f19372d61af8",
    ),
    ('request_key = "req_01HXYZ8K2M3N4P5Q6R7S8T9V0W"', "req_01HXYZ8K2M3N4P5Q6R7S8T9V0W"),
    ('var sortKey string = "created_at_desc"', "created_at_desc"),
    ('const tokenType: string = "Bearer";', "Bearer"),
    ("API_TOKEN ?= $(API_TOKEN_FROM_ENV)", "$(API_TOKEN_FROM_ENV)"),
    ('$password = $_POST["password"];', "$password = $_POST"),
    ('(def secret-key "my-secret-key")', "my-secret-key"),
    ("first_pass: true, backward_pass: 3", "first_pass: true, backward_pass: 3"),
    ('var firstPass string = "compileStageOneResult"', "compileStageOneResult"),
    ('#define API_TOKEN_HEADER "X-Api-Token"', "X-Api-Token"),
    ('NSString *authTokenKey = @"auth_token";', "auth_token"),
    ('static const char SECRET_ENV[] = "APP_SECRET";', "APP_SECRET"),
    ("Dim password As String = Console.ReadLine()", "Console.ReadLine()"),
    ("BUNDLE_BUILD__NOKOGIRI=--use-system-libraries", "--use-system-libraries"),
    # what a review of the declaration rules found changed (none may be)
    ("$password = $request->input('password');", "$request->input"),
    ("my $password = $cgi->param('password');", "$cgi->param"),
    ('{:password "Passwort" :forgot-password "Forgot your password?"}', "Passwort"),
    ('#define ERR_BAD_PASSWORD "Incorrect password"', "Incorrect password"),
    ('Dim lblPassword As String = "Password:"', "Password:"),
    ('var wrongPassword string = "Wrong password, try again"', "Wrong password, try again"),
    ('var pwd string = "/home/app"', "/home/app"),
    ('pwd <- "C:/Users/me/Documents/thesis"', "C:/Users/me/Documents/thesis"),
    ('const PASSWORD_ALPHABET: &str = "abcdefghijklmnopqrstuvwxyz0123456789";', "abcdefghijkl"),
    (
        "image_key: sha256:9f8e7d6c5b4a39281f2e3d4c5b6a7980",
        "sha256:9f8e7d6c5b4a39281f2e3d4c5b6a7980",
    ),
    ('file_key = "5d41402abc4b2a76b9719d911017c592"', "5d41402abc4b2a76b9719d911017c592"),
    ('tenant_key = "3f2b8c1e-9d4a-4f6b-8e2a-1c7d9b0e5f3a"', "3f2b8c1e-9d4a-4f6b-8e2a-1c7d9b0e5f3a"),
    ('build_key = "build-20240512-3f1a9d2"', "build-20240512-3f1a9d2"),
    ('ip_pat = r"(\\d{1,3}\\.){3}\\d{1,3}"', "){3}"),
    ("TAG_PAT=v[0-9]*.[0-9]*.[0-9]*", "v[0-9]*.[0-9]*.[0-9]*"),
    ("BUNDLE_BUILD__PG=--with-pg-config=/usr/local/bin/pg_config", "--with-pg-config"),
    ('auth: user_id="usr_2NfK8xQ7pLm3Rz" ip=10.0.0.1', "usr_2NfK8xQ7pLm3Rz"),
    ("GPG_KEY ?= 0x4AA5C34371567BD2", "0x4AA5C34371567BD2"),
    ("render_pass: shadowMapPassV2", "shadowMapPassV2"),
    ("set -x API_TOKEN (cat ~/.config/token)", "(cat ~/.config/token)"),
    ("set -x PATH $PATH /usr/local/bin", "$PATH /usr/local/bin"),
    # a secret store given a variable or a file, not the value
    ('gh secret set API_TOKEN --body "$API_TOKEN"', "$API_TOKEN"),
    ("gh secret set -f .env.production --repo acme/api", "-f .env.production"),
    ("gh secret set SIGNING_KEY --body-file ./keys/signing.pem", "--body-file ./keys/signing.pem"),
    ('echo "$API_TOKEN" | npx wrangler secret put API_TOKEN', "$API_TOKEN"),
    ("echo hello | wc -c && echo ok | gh secret list", "echo hello | wc -c && echo ok |"),
    # an archive's or an encryption's password flag given a variable, or no password at all
    ("openssl enc -aes-256-cbc -k $BACKUP_PASS -in a.txt", "-k $BACKUP_PASS"),
    ('zip -r out.zip src && unzip -P "$ZIP_PASSWORD" in.zip', "$ZIP_PASSWORD"),
    ("7z a -p -mhe=on out.7z src && curl -k https://localhost:8443", "-p -mhe=on"),
    ("7z x -o/tmp/out a.7z && tar -pxf b.tar", "tar -pxf b.tar"),
    # htpasswd deleting a user, asking for the password, or given a variable
    (
        "htpasswd -D .htpasswd admin && htpasswd -c .htpasswd deploy2024",
        "htpasswd -D .htpasswd admin && htpasswd -c .htpasswd deploy2024",
    ),
    ('htpasswd -nbB ci "$HTPASSWD_PASSWORD"', "$HTPASSWD_PASSWORD"),
    # SQL that sets a password from a bind parameter, or none
    ("CREATE USER app WITH PASSWORD :app_password;", "PASSWORD :app_password"),
    ("ALTER ROLE app WITH PASSWORD NULL;", "PASSWORD NULL"),
    # a tool's setting of a secret's name given a variable, and one about the secret
    ("aws configure set aws_secret_access_key $AWS_SECRET_ACCESS_KEY", "$AWS_SECRET_ACCESS_KEY"),
    ("poetry config set token_ttl_seconds 3600", "token_ttl_seconds 3600"),
    # a file share mounted with no password given, or a variable
    ('smbclient -L //fs01 -U guest% && smbclient //fs01/s -U "svc%$SMB_PASS"', "svc%$SMB_PASS"),
    ("net use Z: \\\\fs01\\backup /user:CORP\\svc * /persistent:no", "svc * /persistent:no"),
    ("net use shows the mapped drives; net use Z: /delete", "net use shows the mapped drives"),
    # a Windows account listed, asked for its password, deleted or switched off
    (
        "net user && net user bob * && net user bob /delete && net user admin2 /active:no",
        "net user && net user bob * && net user bob /delete && net user admin2 /active:no",
    ),
    # poetry's settings of no secret, and the user alone (poetry asks for the password)
    (
        "poetry config virtualenvs.in-project true && poetry config http-basic.corp ci2",
        "poetry config virtualenvs.in-project true && poetry config http-basic.corp ci2",
    ),
    # zip's clusters of options with no password (-e asks for it), or a variable
    ("zip -9rq out.zip src && zip -er out.zip src && zip -rP $ZIP_PASS o.zip s", "$ZIP_PASS"),
    # MySQL's SET PASSWORD given a variable
    ("SET PASSWORD FOR 'app'@'%' = @new_pw; SET PASSWORD = PASSWORD(@pw);", "@new_pw"),
    # Home Assistant's !secret names an entry of secrets.yaml; an echo piped into fly's logs
    ("api_password: !secret http_password", "!secret http_password"),
    ("echo hello | fly logs -a api", "echo hello | fly logs -a api"),
    # a secure string made from a variable, or read from the person
    (
        "$pw = ConvertTo-SecureString $env:DB_PASSWORD -AsPlainText -Force",
        "ConvertTo-SecureString $env:DB_PASSWORD",
    ),
    ('$sec = ConvertTo-SecureString "$Password" -AsPlainText -Force', "$Password"),
    ("the key identified by 'deploy-2024' in the vault", "identified by 'deploy-2024'"),
    ("<password>\n    ${env.DB_PASSWORD}\n</password>", "${env.DB_PASSWORD}"),
    ("<passwordHash>\n    sha256\n</passwordHash>", "sha256"),
    ('$html .= "<input type=password>";', "<input type=password>"),
    ('API_TOKEN ?= "$(shell cat .token)"', "$(shell cat .token)"),
    # stand-ins a person typed for a token: masks, sequences, camelCase words after a prefix
    ("GROQ_API_KEY=gsk_" + "x" * 52, "gsk_" + "x" * 52),
    ("aws configure set aws_access_key_id AKIAXXXXXXXXXXXXXXXX", "AKIAXXXXXXXXXXXXXXXX"),
    ('stripe.api_key = "sk_test_' + "x" * 24 + '"', "sk_test_" + "x" * 24),
    (
        'BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"',
        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    ),
    ("await s.writeFinalTaskCheckpoint(ctx)", "s.writeFinalTaskCheckpoint"),
    ("- (id)hf_requiredCharacteristicTypesForDisplay;", "hf_requiredCharacteristicTypesForDisplay"),
    # public by what holds them, templates of a usage line, a package's coordinates
    (
        "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmQINBGTq3kQBEAC7xZ2vN8pL4mR9sK1wT6yB3hF0dJ5cA2eG"
        "7iU4oY8nW\n=Kx7Q\n-----END PGP PUBLIC KEY BLOCK-----",
        "mQINBGTq3kQBEAC7xZ2vN8pL4mR9sK1wT6yB3hF0dJ5cA2eG7iU4oY8nW",
    ),
    (
        'vapid_public_key = "BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUb"',
        "BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUb",
    ),
    ("usage: curl -u <user:password> https://api.example.io/v1/items", "<user:password>"),
    ('-H "Authorization: Basic {base64(user:password)}"', "{base64(user:password)}"),
    ('implementation "io.jsonwebtoken:jjwt-jackson-0.11.5"', "jjwt-jackson-0.11.5"),
    ("the admin secret: shop-prod-4821.hasura.app (its host)", "shop-prod-4821.hasura.app"),
    ("aws secretsmanager get-secret-value --secret-id prod/db/password", "prod/db/password"),
    ("1716239023123456|usr_2fXk9LmQ7pR3tV8wY1zB4cD6eF|signup", "usr_2fXk9LmQ7pR3tV8wY1zB4cD6eF"),
    (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: api\ndata:\n"
        "  api-key: {{.Values.apiKey|b64enc}}\n",
        "{{.Values.apiKey|b64enc}}",
    ),
    (
        "kind: List\nitems:\n- kind: ConfigMap\n  data:\n    DATABASE_HOST: db.internal.example.com"
        "\n- kind: Secret\n  data:\n    password: c3VwZXItc2VjcmV0LXBhc3N3b3Jk\n",
        "db.internal.example.com",
    ),
    ('"secretId": "3f2b8c1e-9d4a-4f6b-8e2a-1c7d9b0e5f3a"', "3f2b8c1e-9d4a-4f6b-8e2a-1c7d9b0e5f3a"),
    ('{"SecretId": "MyTestDatabaseSecret", "VersionStage": "AWSCURRENT"}', "MyTestDatabaseSecret"),
    # a name in words, a dash, a quoted value that is a sentence or another key's value
    ("the password - 'must be 8 characters' - is checked", "must be 8 characters"),
    ("cache key - 'user:1234:profile'", "user:1234:profile"),
    ("launch - 'sdk-example-key-here-for-docs'", "sdk-example-key-here-for-docs"),
    ("api-gateway-prod-eu-west-1-stage", "api-gateway-prod-eu-west-1-stage"),
    # after a dash, a value no token alphabet holds ("?" inside) is no token (a password is)
    ("slack token - 'xoxb-65677559833?9613778673399u'", "xoxb-65677559833?9613778673399u"),
    # ids of the shapes of newer provider formats: a request id, an MD5 pair
    (
        "request id: api-7c9e6679-7425-40de-944b-e07fc1f90ae7",
        "api-7c9e6679-7425-40de-944b-e07fc1f90ae7",
    ),
    (
        "md5: rL0Y20zC+Fzt72VPzMSk2A==:acbd18db4cc2f85cedef654fccc4a4d8",
        "rL0Y20zC+Fzt72VPzMSk2A==:acbd18db4cc2f85cedef654fccc4a4d8",
    ),
    # a JSON value that is base64 of small integers holds "AQAAAB" without being Jenkins'
    ('{"blob":"AQAAABAAAAA=","name":"ids","owner":"team-data"}', "team-data"),
    # after a password's dash, a word, an identifier or a file name: a label, not a password
    ("Reset password - 'Submit' button", "Submit"),
    # words quoted after a password's name that are the UI's, with capitals or punctuation
    ('the password "Not set" label shows', "Not set"),
    ('the password "Forgot your password?" link', "Forgot your password?"),
    ("The hint under password - 'MinLength8' shows", "MinLength8"),
    # a name before "=" is no random piece of the value after it
    ("export signingKeyV2=Ab3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5bC7dEf", "signingKeyV2"),
    # a path after rsync's or git's -u and a user name given alone
    ("rsync -u deploy@web01:'/srv/my site/' ./backup/", "/srv/my site/"),
    ('curl -u "jenkins2:" https://ci.corp.io', "jenkins2"),
    ("Usage: curl -u USER[:PASSWORD] URL", "USER[:PASSWORD]"),
    ("sed -u 's/:debug/:info/' app.log", "s/:debug/:info/"),
    # a Dynatrace token's shape with a secret part far shorter than 64 characters
    ("token=dt0c01.ST2EY72KQINMH574WMNVI7YN.TOOSHORT", "dt0c01.ST2EY72KQINMH574WMNVI7YN.TOOSHORT"),
    # an agent's session id (the day, then a UUID) under a session name: an id, not a cookie
    (
        '"session_id": "2026-01-05-0bb9a2d9-a51e-4d5a-8275-566c766a0ff2",',
        "2026-01-05-0bb9a2d9-a51e-4d5a-8275-566c766a0ff2",
    ),
    (
        "Entire-Session: 2026-01-08-45f30e78-e233-4c58-9ed6-332d549a3521",
        "2026-01-08-45f30e78-e233-4c58-9ed6-332d549a3521",
    ),
    # a YAML block under a secret's name holding prose or a reference; a counter added to
    ("password_help: |\n  Use at least 12 characters.\n", "Use at least 12 characters."),
    ("api_key: |\n  ${API_KEY}\n", "${API_KEY}"),
    # YAML's anchors and aliases of a block of settings, and an alias given to a secret's name
    (
        "secrets: &secret_defaults\n  region: eu-west-1\nprod:\n  <<: *secret_defaults\n",
        "secrets: &secret_defaults",
    ),
    ("db:\n  password: *shared_db_password\n", "*shared_db_password"),
    ("total_tokens += usage.output_tokens", "usage.output_tokens"),
    # a short prefix before camel-case words: a page's widget or a CSS class, no token
    (
        '<div data-cel-widget="desktop-rhf_SponsoredProductsRemoteRHFSearchEXPSubsK2ClickPagination">',
        "desktop-rhf_SponsoredProductsRemoteRHFSearchEXPSubsK2ClickPagination",
    ),
    # words joined by dots to a random run: the words stay
    ("saved report.Q8mX2pL9vR4tY7wK3nB6cF1hJ5dG0sAz.pdf to the bucket", "saved report."),
    ("cache at v2.Q8mX2pL9vR4tY7wK3nB6cF1hJ5dG0sAz.tar.gz", ".tar.gz"),
    # a bare key whose value is a cache's or a map's key, or a digest
    ("cache hit for key=user:42:profile", "user:42:profile"),
    ("key = 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "9f86d081884c"),
    ('<add key="EnableRetries" value="true"/>', "EnableRetries"),
    # a CSV header and a list of names after a secret's name
    ("token,count,model\nprompt,812,gpt-4o", "token,count,model"),
    ("apiToken,refreshToken,sessionCookieName", "refreshToken,sessionCookieName"),
    # ids of LLM API objects in a pasted response
    (
        '{"id": "msg_bdrk_01P75ryByUmPybsgSkdRtaZU", "type": "message"}',
        "msg_bdrk_01P75ryByUmPybsgSkdRtaZU",
    ),
    ('"tool_use_id": "toolu_01SKk2dM5q1c8gecaoatnwJnQx"', "toolu_01SKk2dM5q1c8gecaoatnwJnQx"),
    ('{"id": "chatcmpl-9x8KXJ2mQpL4vRtYz7NcB3aWdE1fG"}', "chatcmpl-9x8KXJ2mQpL4vRtYz7NcB3aWdE1fG"),
    # a token partly masked: its secret part hidden behind a run of *, # or bullets
    (
        "SLACK_USER_TOKEN=xoxp-918273645012-564738291034-102938475610-********************",
        "xoxp-918273645012-564738291034-102938475610-********************",
    ),
    ('"token": "xoxb-271828182845-314159265358-####################"', "####"),
    ("GITHUB_TOKEN=ghp_Q7mT2vR9kL4pX8nB3c##############", "ghp_Q7mT2vR9kL4pX8nB3c####"),
    ('api_key: "sk_live_9fKd2LqP7xWv••••••••••••••••"', "sk_live_9fKd2LqP7xWv••••"),
    # a provider's prefix before a body too short for its format: a stand-in or a cut token
    ('ANTHROPIC_API_KEY="sk-ant-api03-x7Tq2"', "sk-ant-api03-x7Tq2"),
    ("SLACK_BOT_TOKEN=xoxb-42424242", "xoxb-42424242"),
    ("settlemint_token: sm_pat_9qk2Lw3", "sm_pat_9qk2Lw3"),
    ('duffel_token := "duffel_live_q8w2e4"', "duffel_live_q8w2e4"),
    # a bare key whose value is a file's name, a class's or a host's, not an issued token
    (
        "listing key=part-00001-9c1d2e3f-4a5b-6c7d-8e9f-0a1b2c3d4e5f-c000.snappy.parquet",
        "part-00001-9c1d2e3f-4a5b-6c7d-8e9f-0a1b2c3d4e5f-c000.snappy.parquet",
    ),
    ("cursor key=eyJvZmZzZXQiOjQwfQ== (the next page)", "eyJvZmZzZXQiOjQwfQ=="),
    ("[DEBUG] Using Key=3f9a2c1b7e4d.pem from the vault mount", "3f9a2c1b7e4d.pem"),
    ("key=com.example.billing.InvoiceService", "com.example.billing.InvoiceService"),
    ("Using key = api.eu-west-1.amazonaws.com for the signer", "api.eu-west-1.amazonaws.com"),
    # a provider's prefix before one letter typed over (a mask, as x's are)
    ('apiKey: "AIza' + "a" * 35 + '"', "AIza" + "a" * 35),
    # a token's place filled with zeros, and a placeholder password of one letter typed over
    (
        "SOURCEGRAPH_TOKEN=sgp_local_0000000000000000000000000000000000000000  # CI sets the real one",
        "sgp_local_0000000000000000000000000000000000000000",
    ),
    ('"access_token": "ghp_000000000000000000000000000000000000"', "ghp_0000000000000000"),
    ('curl -s --user "admin:zzzz" https://ci.internal.test/api', "admin:zzzz"),
    ("mysql -u root -paaaa orders", "-paaaa"),
    # a private key block of a template or a doc: its body names the key, holds none
    (
        "GOOGLE_PRIVATE_KEY='-----BEGIN PRIVATE KEY-----\\nPASTE-THE-KEY-FROM-THE-JSON-FILE\\n"
        "-----END PRIVATE KEY-----\\n'",
        "PASTE-THE-KEY-FROM-THE-JSON-FILE",
    ),
    (
        "ssh_key: |\n  -----BEGIN OPENSSH PRIVATE KEY-----\n  b3Bl...\n  -----END OPENSSH PRIVATE KEY-----",
        "b3Bl...",
    ),
    # a token that its name says is public (made to be seen in a page or an app)
    ('mapPublicToken = "Wq4Rz8Tn2Lm6Yv0Kp3Hd7Jx5Bc9Fg1Ns"', "Wq4Rz8Tn2Lm6Yv0Kp3Hd7Jx5Bc9Fg1Ns"),
    (
        "widget_public_token: Hb6Nq1Zt8Wc3Rk5Lp9Xv2Mj7Ds4Gf0Ya  # shown in the page",
        "Hb6Nq1Zt8Wc3Rk5Lp9Xv2Mj7Ds4Gf0Ya",
    ),
    # the head of a token cut with an ellipsis, shorter than any token of its format
    (
        "run: export OP_SERVICE_ACCOUNT_TOKEN=ops_eyJkZXZpY2VVdWlkIjoiazN2cQ...",
        "ops_eyJkZXZpY2VVdWlkIjoiazN2cQ",
    ),
    ("GROQ_API_KEY=gsk_T4hw9Qm2Lz7Xc1Vb… (the rest is in the vault)", "gsk_T4hw9Qm2Lz7Xc1Vb"),
    # a SAS token's parameters without its signature: the dates and rights alone grant nothing
    (
        "STORAGE_SAS_TOKEN=sv=2023-08-03&ss=b&srt=co&sp=rl&se=2027-01-31T00:00:00Z&spr=https",
        "sv=2023-08-03&ss=b&srt=co&sp=rl&se=2027-01-31T00:00:00Z&spr=https",
    ),
    (
        'sas_token: "sp=racwdl&st=2026-11-02T08:15:00Z&se=2026-11-09T16:15:00Z&sip=10.0.4.0-10.0.4.255'
        '&spr=https&sv=2022-11-02&sr=c"',
        "sp=racwdl&st=2026-11-02T08:15:00Z",
    ),
    # values a SOPS file keeps encrypted (made to be committed), and ciphertext blocks
    (
        "    db_password: ENC[AES256_GCM,data:TzRKSaifmSoM,iv:KaNLdAVmz99Aa2h6wfP5h81Bj5WAGzA3VjMOcLk"
        "+BsE=,tag:yCBSKv9cAaT7pcNMLR2DfA==,type:str]",
        "iv:KaNLdAVmz99Aa2h6wfP5h81Bj5WAGzA3VjMOcLk+BsE=,tag:yCBSKv9cAaT7pcNMLR2DfA==",
    ),
    (
        "sops:\n    mac: ENC[AES256_GCM,data:qSpPnibLkkBBwj71Fu5YpkwRWksayUBX,iv:bI+rtA2PvddNxeYcE6hY"
        "Ezx/lYPxzf3MUcYa8XoKK2g=,tag:Rw/TuH2wpVoxqxa3iICirw==,type:str]",
        "data:qSpPnibLkkBBwj71Fu5YpkwRWksayUBX,iv:bI+rtA2PvddNxeYcE6hYEzx/lYPxzf3MUcYa8XoKK2g=",
    ),
    (
        "enc: |\n    -----BEGIN PGP MESSAGE-----\n\n"
        "    h6cnn8QeGidMozMn4jXRI8bRre+Y/jc2OLSfJLi8U0aZG9+k8TD0fckT6CMGBmZx\n"
        "    PKN9p+cJ6dyLu4B5222DEfbZqdKwNtQUxykydRQUVcKhhyxbLtwCdEajOT92bQoE\n"
        "    =dJa3\n    -----END PGP MESSAGE-----",
        "PKN9p+cJ6dyLu4B5222DEfbZqdKwNtQUxykydRQUVcKhhyxbLtwCdEajOT92bQoE",
    ),
    (
        "-----BEGIN AGE ENCRYPTED FILE-----\n"
        "3lUiWsGQQ5y4TMuD/Gejgi3HiycuvjDRZucIFLzvNql6gl6CDh90XU5VwmYp8jre\n"
        "VMsWCajMwFwPu92a20AAZzGSQ7jXUGNwB/PZscue34Z7g3AwTta/HqS4amxi19c3\n"
        "-----END AGE ENCRYPTED FILE-----",
        "3lUiWsGQQ5y4TMuD/Gejgi3HiycuvjDRZucIFLzvNql6gl6CDh90XU5VwmYp8jre",
    ),
]


# -- crafted single lines: the shapes that made redaction quadratic (issue 19) ----------------


def _repeated(unit: str) -> Callable[[int], str]:
    """A maker of `unit` repeated to about `n` characters."""
    return lambda n: unit * (n // len(unit))


_SOPS_VALUE = (
    "ENC[AES256_GCM,data:TzRKSaifmSoM,iv:KaNLdAVmz99Aa2h6wfP5h81Bj5WAGzA3VjMOcLk+BsE=,"
    "tag:yCBSKv9cAaT7pcNMLR2DfA==,type:str] "
)
# each shape a maker of one line of about n characters: `tools/eval_secrets.py --worst` times
# them at 1 MB, `tests/test_secrets.py` checks that the time grows linearly with n
CRAFTED: dict[str, Callable[[int], str]] = {
    "token: repeated": _repeated("token:"),
    "API_KEY=y...": lambda n: "API_KEY=" + "y" * (n - 8),
    "API_KEY=y repeated": _repeated("API_KEY=y"),
    "export X_TOKEN=": _repeated("export X_TOKEN="),
    "pass=... repeated": _repeated("pass="),
    "base64 run": _repeated("Ab3+"),
    "key=value pairs": _repeated("key=aB3dE5fG7hI9 "),
    "password: words": _repeated("password: is "),
    "url userinfo": lambda n: "https://" + "u:p@" * ((n - 8) // 4),
    "dotted tokens": _repeated("eyJhbGciOi."),
    "secret words": _repeated("secret token key auth "),
    "quotes": _repeated('"password": "'),
    "hex run": _repeated("0123456789abcdef"),
    "zero width": _repeated("a\u200b"),
    "full width": _repeated("\uff41\uff22\uff13"),
    # a finding on every few characters: each was looked for again in the whole text
    "-a redis-cli repeated": _repeated(" -a redis-cli"),
    "distinct passwords": lambda n: "".join(f"sshpass -p Zq{i:06d}x " for i in range(n // 21)),
    "table cells": _repeated("| api_token | "),
    # the command lines read from a tool's word, each a finding
    "echo | secret put": _repeated("echo x | wrangler secret put "),
    "htpasswd -b": _repeated("htpasswd -b f u p1 "),
    "-U user%": _repeated("smbclient -U u%p "),
    "net user u p1": _repeated("net user u p1 "),
    "zip -rP p1": _repeated("zip -rP p1 "),
    "poetry http-basic": _repeated("poetry config http-basic.r u p1 "),
    "SET PASSWORD FOR": _repeated("SET PASSWORD FOR 'u'@'h' = 'p1' "),
    "SET PASSWORD FOR, no =": _repeated("SET PASSWORD FOR "),
    "password: !!str p1": _repeated("password: !!str p1\n"),
    # values SOPS encrypted, each with a random nonce the entropy rule finds
    "sops values": _repeated(_SOPS_VALUE),
}
