"""Fake secrets in realistic contexts, and benign text that must survive, for the redaction tests.

Every secret below is format-correct (right prefix, length and alphabet) but random, generated once
and pasted as a literal; none of them was ever a live credential. Data only: no code runs here.

SECRETS: (context text, substrings that must not survive redaction, kind the placeholder names)
BENIGN:  (context text, substrings that must survive unchanged)
"""

from __future__ import annotations

SECRETS: list[tuple[str, list[str], str]] = [
    # --- OpenAI / Anthropic --------------------------------------------------------------------
    (
        "$ export OPENAI_API_KEY=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\n$ python scripts/eval.py --model gpt-4o-mini",
        [
            "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"
        ],
        "openai_key",
    ),
    (
        "here is my key sk-M0XvqZjxTW3xvboSRt5Mh3dAwVtRMflhbmuaptt0Azn0DNRU, use it for the eval run and don't commit it",
        ["sk-M0XvqZjxTW3xvboSRt5Mh3dAwVtRMflhbmuaptt0Azn0DNRU"],
        "openai_key",
    ),
    (
        "openai.AuthenticationError: Error code: 401 - {'error': {'message': 'Incorrect API key provided: sk-svcacct-GVBrYSuIb9OZiFZ3HLKv797TPNbpjava1bMZwIMl. You can find your API key at https://platform.openai.com/account/api-keys.', 'type': 'invalid_request_error'}}",
        ["sk-svcacct-GVBrYSuIb9OZiFZ3HLKv797TPNbpjava1bMZwIMl"],
        "openai_key",
    ),
    (
        'curl https://api.anthropic.com/v1/messages -H "x-api-key: sk-ant-api03-vdp5gjTrD8Osj_LnZ5R-j_8U_m7aSz7NRSOtv75y4SXvE9rwLbAtf6e9cpCGybY9lMR4pAwBp3GVy1PixOqoRGrB5Vpg5AA" -H "anthropic-version: 2023-06-01" -d @req.json',
        [
            "sk-ant-api03-vdp5gjTrD8Osj_LnZ5R-j_8U_m7aSz7NRSOtv75y4SXvE9rwLbAtf6e9cpCGybY9lMR4pAwBp3GVy1PixOqoRGrB5Vpg5AA"
        ],
        "anthropic_key",
    ),
    (
        'Traceback (most recent call last):\n  File "/home/alice/bot/main.py", line 12, in <module>\n    client = Anthropic(api_key="sk-ant-api03-C6QsyHZytfqY6K1Qjah4dXd3eOa1Zcc_a4CgOFfqRgz7IhYePP2lny2pg17-dUM2jNKogorTAuRVpQ09oiVeZW-rEvmkXAA", max_retries=0)\nanthropic.AuthenticationError: 401 invalid x-api-key',
        [
            "sk-ant-api03-C6QsyHZytfqY6K1Qjah4dXd3eOa1Zcc_a4CgOFfqRgz7IhYePP2lny2pg17-dUM2jNKogorTAuRVpQ09oiVeZW-rEvmkXAA"
        ],
        "anthropic_key",
    ),
    # --- AWS -----------------------------------------------------------------------------------
    (
        "$ cat ~/.aws/credentials\n[default]\naws_access_key_id = AKIAB86W04NKTH169DXN\naws_secret_access_key = sKz5b70CO8W7RQHy2Yp+ptzsJqLOJqu3g9DYpQax\nregion = eu-central-1",
        ["AKIAB86W04NKTH169DXN", "sKz5b70CO8W7RQHy2Yp+ptzsJqLOJqu3g9DYpQax"],
        "aws_secret_key",
    ),
    (
        "$ printenv | grep AWS\nAWS_ACCESS_KEY_ID=ASIACWJXCPDXF487HUS5\nAWS_SECRET_ACCESS_KEY=EN+cNljiRkV71kDRuIr2jhTxs+OHKDpnJh/rgiOa\nAWS_SESSION_TOKEN=FC8ZrXbeg/fT3pG+h8msMlc+T1ah9sdbEl7oX8nrEHAluvtdgDW1+In81LJK6yc+jecsblnAk2vnXK6+Zy2GKlPOyJV9YZGWNkJnsrUgBhcpqIuRhWlMkU6ag5t/Zj3aoeWqeHGwlifXjw9APP8Dy+3XzZmBNQR2yTBGTCuSsH5LM/Em9iJL\nAWS_REGION=us-east-1",
        [
            "ASIACWJXCPDXF487HUS5",
            "EN+cNljiRkV71kDRuIr2jhTxs+OHKDpnJh/rgiOa",
            "FC8ZrXbeg/fT3pG+h8msMlc+T1ah9sdbEl7oX8nrEHAluvtdgDW1+In81LJK6yc+jecsblnAk2vnXK6+Zy2GKlPOyJV9YZGWNkJnsrUgBhcpqIuRhWlMkU6ag5t/Zj3aoeWqeHGwlifXjw9APP8Dy+3XzZmBNQR2yTBGTCuSsH5LM/Em9iJL",
        ],
        "aws_access_key",
    ),
    (
        '$ aws sts assume-role --role-arn arn:aws:iam::123456789012:role/deployer --role-session-name ci\n{\n    "Credentials": {\n        "AccessKeyId": "ASIAQRT22U5PO328BTVI",\n        "SecretAccessKey": "Pq/N9RtlnnudSkpmKog0Qwp/vaQcT7xl2cwC6dT0",\n        "Expiration": "2024-06-11T12:00:00+00:00"\n    }\n}',
        ["ASIAQRT22U5PO328BTVI", "Pq/N9RtlnnudSkpmKog0Qwp/vaQcT7xl2cwC6dT0"],
        "env_secret",
    ),
    # --- GitHub / GitLab -----------------------------------------------------------------------
    (
        "$ git remote -v\norigin\thttps://x-access-token:ghs_AfCK9eVGViflxutnrYecpJbsNaUXkFVi3CzO@github.com/acme/widgets.git (fetch)\norigin\thttps://x-access-token:ghs_AfCK9eVGViflxutnrYecpJbsNaUXkFVi3CzO@github.com/acme/widgets.git (push)",
        ["ghs_AfCK9eVGViflxutnrYecpJbsNaUXkFVi3CzO"],
        "github_token",
    ),
    (
        "push failed again - try with ghp_Mbj8KVuxgaaJl7LRiiQbLJmWZTsUryrgsVJN, that one has repo scope",
        ["ghp_Mbj8KVuxgaaJl7LRiiQbLJmWZTsUryrgsVJN"],
        "github_token",
    ),
    (
        '{"access_token":"gho_8OLJtqCdpa0WI2Kk8xxo3GI0uoV6vGTFN4g3","token_type":"bearer","scope":"repo,gist"}',
        ["gho_8OLJtqCdpa0WI2Kk8xxo3GI0uoV6vGTFN4g3"],
        "github_token",
    ),
    (
        "$ echo 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 | gh auth login --with-token\n- gh config git_protocol https\n✓ Logged in as alice",
        [
            "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"
        ],
        "github_token",
    ),
    (
        'App installation response: {"token": "ghu_kvgsOM5LsE1zKLiSpYMZElLTCPPAwVv82BHZ", "expires_in": 28800, "refresh_token": "ghr_O0vk3ZdjYYCfrpx8IH5vbljomsx29WujczU9"}',
        ["ghu_kvgsOM5LsE1zKLiSpYMZElLTCPPAwVv82BHZ", "ghr_O0vk3ZdjYYCfrpx8IH5vbljomsx29WujczU9"],
        "github_token",
    ),
    (
        "$ git clone https://oauth2:glpat-hP46PbmT1TOkzfR1wKbP@gitlab.com/acme/platform/api.git\nCloning into 'api'...",
        ["glpat-hP46PbmT1TOkzfR1wKbP"],
        "gitlab_token",
    ),
    (
        'curl --header "PRIVATE-TOKEN: glpat-GPzEyoL8EsaJd_wyXxQP" "https://gitlab.example.com/api/v4/projects?membership=true"',
        ["glpat-GPzEyoL8EsaJd_wyXxQP"],
        "gitlab_token",
    ),
    # --- Slack ---------------------------------------------------------------------------------
    (
        "Traceback (most recent call last):\n  File \"/srv/notify/send.py\", line 31, in post\n    resp = WebClient(token='xoxb-656278552765-4418520073878-lr7PNBC159twsB09lmZYcZt7').chat_postMessage(channel=ch, text=msg)\nslack_sdk.errors.SlackApiError: The request to the Slack API failed. (url: https://www.slack.com/api/chat.postMessage)\nThe server responded with: {'ok': False, 'error': 'channel_not_found'}",
        ["xoxb-656278552765-4418520073878-lr7PNBC159twsB09lmZYcZt7"],
        "slack_token",
    ),
    (
        "curl -X POST -H 'Content-type: application/json' --data '{\"text\":\"deploy of api 2.3.1 done\"}' https://hooks.slack.com/services/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",
        ["TGHQQ2P5D/BINTO5ANBGL/oouNun91zkIRlDb9PBcsB1hJ", "oouNun91zkIRlDb9PBcsB1hJ"],
        "slack_webhook",
    ),
    (
        "$ cat .env.local\nSLACK_USER_TOKEN=xoxp-078146197819-144668006958-2577598996776-697312bba82af983eadec108b08c3ce0\nSLACK_CHANNEL=#deploys",
        ["xoxp-078146197819-144668006958-2577598996776-697312bba82af983eadec108b08c3ce0"],
        "slack_token",
    ),
    (
        "slack:\n  app_token: xapp-1-LF3SNQDTXQU-6173996987785-63cc17fd04d5014995756e61d6b91cda411dfd72f1a3447c745c48c0b90a16be\n  signing_secret: f55e84f9681b98c7b765109fb5eb8102\n  channel: C04ABCDEF",
        [
            "xapp-1-LF3SNQDTXQU-6173996987785-63cc17fd04d5014995756e61d6b91cda411dfd72f1a3447c745c48c0b90a16be",
            "f55e84f9681b98c7b765109fb5eb8102",
        ],
        "slack_token",
    ),
    # --- Stripe --------------------------------------------------------------------------------
    (
        "StripeAuthenticationError: Invalid API Key provided: 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\n    at res.toJSON.then.StripeAPIError.message (/app/node_modules/stripe/lib/StripeResource.js:234:23)\n    at processTicksAndRejections (node:internal/process/task_queues:95:5)",
        [
            "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"
        ],
        "stripe_key",
    ),
    (
        "$ stripe listen --api-key sk_test_D0f6YYIgrCOX6Jhw7Hd11XzW --forward-to localhost:4242/webhook\n> Ready! Your webhook signing secret is whsec_7HUadiQTaoDQy3nuUdP0Jx3aiGXi85RB (^C to quit)",
        ["sk_test_D0f6YYIgrCOX6Jhw7Hd11XzW", "whsec_7HUadiQTaoDQy3nuUdP0Jx3aiGXi85RB"],
        "stripe_key",
    ),
    (
        "docker run --rm -e STRIPE_RESTRICTED_KEY=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 -p 8000:8000 acme/billing:1.4.2",
        [
            "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"
        ],
        "stripe_key",
    ),
    # --- Google --------------------------------------------------------------------------------
    (
        "GET https://maps.googleapis.com/maps/api/geocode/json?address=Berlin&key=AIzaA2PQLUD_W1nW4kGeJ_ky88BV8_luteLKWMF 200 OK (143 ms)",
        ["AIzaA2PQLUD_W1nW4kGeJ_ky88BV8_luteLKWMF"],
        "google_api_key",
    ),
    (
        'const firebaseConfig = {\n  apiKey: "AIzamkkBTDijysfSa5Jhl7LiECB7lavfWXTKTiV",\n  authDomain: "acme-dev.firebaseapp.com",\n  projectId: "acme-dev",\n};',
        ["AIzamkkBTDijysfSa5Jhl7LiECB7lavfWXTKTiV"],
        "google_api_key",
    ),
    (
        'curl -s -H "Authorization: Bearer ya29.a0Q47qsxG72VnY6wGD4tylc_Y3oLOr0GlsP5S-KXv5Zzjhe3p1g1aKfux6fX1L3dd4u2dDGqt1NvVeIWmQmcVFzbjcoP95wL0rKA53zmg7srxirfu19Ac_kKd2Lq1D595WXjjOt6v3rzKE4RNo88yLVv" "https://www.googleapis.com/drive/v3/files?pageSize=10"',
        [
            "ya29.a0Q47qsxG72VnY6wGD4tylc_Y3oLOr0GlsP5S-KXv5Zzjhe3p1g1aKfux6fX1L3dd4u2dDGqt1NvVeIWmQmcVFzbjcoP95wL0rKA53zmg7srxirfu19Ac_kKd2Lq1D595WXjjOt6v3rzKE4RNo88yLVv"
        ],
        "google_oauth",
    ),
    (
        '{\n  "type": "service_account",\n  "project_id": "acme-analytics",\n  "private_key_id": "603863e3988380844e02ea62d89b3f9c92fe8627",\n  "private_key": "-----BEGIN PRIVATE KEY-----\\n7mVvp/DKOHQ9UODdfdFd2lA2D+FNQEoQ+/xZ90txdegvcU+G7lJ2m7erV7xnuILo\\nVGbuLI4C0GRwa9xed3XBYqpNnRNB7FIYnqdodrN1o5JqEt/lRC3ZWYdzAeAY2omt\\n-----END PRIVATE KEY-----\\n",\n  "client_email": "etl@acme-analytics.iam.gserviceaccount.com"\n}',
        [
            "7mVvp/DKOHQ9UODdfdFd2lA2D+FNQEoQ+/xZ90txdegvcU+G7lJ2m7erV7xnuILo",
            "VGbuLI4C0GRwa9xed3XBYqpNnRNB7FIYnqdodrN1o5JqEt/lRC3ZWYdzAeAY2omt",
        ],
        "private_key",
    ),
    (
        '{"installed":{"client_id":"48213-abc.apps.googleusercontent.com","client_secret":"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","redirect_uris":["http://localhost"]}}',
        ["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"],
        "google_oauth",
    ),
    # --- npm / Hugging Face / other providers --------------------------------------------------
    (
        "$ cat ~/.npmrc\n//registry.npmjs.org/:_authToken=npm_3WszHXbrWLIs57e6ozOPuC5k64LUpqirSlI9\n@acme:registry=https://npm.pkg.github.com",
        ["npm_3WszHXbrWLIs57e6ozOPuC5k64LUpqirSlI9"],
        "npm_token",
    ),
    (
        "$ huggingface-cli login --token hf_bHtNWaENHxeliZ9yfNusZsePuI5lwwhmik --add-to-git-credential\nToken is valid (permission: write).",
        ["hf_bHtNWaENHxeliZ9yfNusZsePuI5lwwhmik"],
        "huggingface_token",
    ),
    (
        'api = HfApi(token="hf_hfJXqIEnomef2mSJ5CMTIeg1ZTVnVv2fgK")\napi.upload_folder(folder_path="out/", repo_id="alice/tiny-model")',
        ["hf_hfJXqIEnomef2mSJ5CMTIeg1ZTVnVv2fgK"],
        "huggingface_token",
    ),
    (
        'sg = SendGridAPIClient("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")\nresponse = sg.send(message)',
        ["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"],
        "sendgrid_key",
    ),
    (
        "$ cat ~/.pypirc\n[pypi]\n  username = __token__\n  password = pypi-AgEIcHlwaS5vcmcFFEZciCQP00U87juJUBEoAXHmGRZ2XsTS5MivpF9k9jz89iLWeajzV6xuRXL",
        ["pypi-AgEIcHlwaS5vcmcFFEZciCQP00U87juJUBEoAXHmGRZ2XsTS5MivpF9k9jz89iLWeajzV6xuRXL"],
        "pypi_token",
    ),
    (
        "$ doctl auth init -t dop_v1_64131b5250f067b74c68bd1ee27518e4bd6e1e465a7829ebc325bd9941318760\nValidating token... OK",
        ["dop_v1_64131b5250f067b74c68bd1ee27518e4bd6e1e465a7829ebc325bd9941318760"],
        "digitalocean_token",
    ),
    (
        "notify: POST https://discord.com/api/webhooks/2987477059091854057/HHqodEvUF0f-UzpWcP1mLMwT3zWLA825gFKEOU0Ekm5h-Kt9sbg9bAjtbDV3J7Y59r5z returned 204",
        ["HHqodEvUF0f-UzpWcP1mLMwT3zWLA825gFKEOU0Ekm5h-Kt9sbg9bAjtbDV3J7Y59r5z"],
        "discord_webhook",
    ),
    (
        "Invoke-RestMethod -Method Post -Uri 'https://acme.webhook.office.com/webhookb2/6e1f2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b@9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d/IncomingWebhook/3f9c1b7e5d2a4c8e9b0a6f4d2c8e1b3a/0c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f' -Body $json",
        ["IncomingWebhook/3f9c1b7e5d2a4c8e9b0a6f4d2c8e1b3a"],
        "teams_webhook",
    ),
    # --- passwords and keys in code and on command lines ------------------------------------
    (
        'ApiClient client = new ApiClient();\nclient.setApiKey("Ja8xLq2mK9vQ3rT5Yz4Wv");\nclient.connect();',
        ["Ja8xLq2mK9vQ3rT5Yz4Wv"],
        "env_secret",
    ),
    (
        "      containers:\n        - name: api\n          env:\n            - name: STRIPE_API_KEY\n              value: Yv8xLq2mK9vQ3rT5Yz2Pd\n            - name: LOG_LEVEL\n              value: info",
        ["Yv8xLq2mK9vQ3rT5Yz2Pd"],
        "env_secret",
    ),
    (
        "$ keytool -importkeystore -srckeystore app.p12 -srcstorepass Ks8xLq2mK9v -destkeystore app.jks -deststorepass Kd7wPq3nL8u",
        ["Ks8xLq2mK9v", "Kd7wPq3nL8u"],
        "password",
    ),
    ("$ redis-cli -h cache.internal -a Rc8xLq2mK9vQ ping\nPONG", ["Rc8xLq2mK9vQ"], "password"),
    (
        "sqlcmd -S tcp:db.internal,1433 -U sa -P Sq8xLq2mK9vQ! -Q 'SELECT 1'",
        ["Sq8xLq2mK9vQ!"],
        "password",
    ),
    (
        "az login --service-principal -u http://ci-app -p Az8xLq2mK9vQ3rT5Yz --tenant acme.onmicrosoft.com",
        ["Az8xLq2mK9vQ3rT5Yz"],
        "password",
    ),
    (
        "$ echo 'Dk8xLq2mK9vQ3rT5' | docker login registry.acme.dev -u deploy --password-stdin\nLogin Succeeded",
        ["Dk8xLq2mK9vQ3rT5"],
        "password",
    ),
    ("$ cat ~/.pgpass\ndb.internal:5432:app:appuser:Pg9xLq2mK8vQ", ["Pg9xLq2mK8vQ"], "password"),
    ("$ sqlplus scott/Sp8xLq2mK9@ORCL @migrate.sql", ["Sp8xLq2mK9"], "password"),
    ("$ expdp system/Ex8xLq2mK9@ORCL dumpfile=app.dmp schemas=app", ["Ex8xLq2mK9"], "password"),
    (
        '{"command": "echo \'Dk8xLq2mK9vQ3rT5\' | docker login ghcr.io -u ci --password-stdin"}',
        ["Dk8xLq2mK9vQ3rT5"],
        "password",
    ),
    ("redis-cli -h cache -a 'Rq8xLq2mK9vQ' ping", ["Rq8xLq2mK9vQ"], "password"),
    (
        'kubectl get deploy api -o json | jq .spec.template.spec.containers[0].env\n[{"name": "STRIPE_API_KEY", "value": "Kj8xLq2mK9vQ3rT5Yz2Pd"}]',
        ["Kj8xLq2mK9vQ3rT5Yz2Pd"],
        "env_secret",
    ),
    (
        'echo "db.internal:5432:app:appuser:Pw8xLq2mK9vQ" >> ~/.pgpass && chmod 600 ~/.pgpass',
        ["Pw8xLq2mK9vQ"],
        "password",
    ),
    (
        "spring.datasource.url=jdbc:oracle:thin:app/Or8xLq2mK9@db.internal:1521/ORCLPDB1",
        ["Or8xLq2mK9"],
        "password",
    ),
    ("$ echo 'deploy:Ch8xLq2mK9' | sudo chpasswd", ["Ch8xLq2mK9"], "password"),
    # --- Bearer, Basic, JWT --------------------------------------------------------------------
    (
        "> GET /dashboard HTTP/1.1\n> Host: app.acme.dev\n> Cookie: session=eyJ1c2VyX2lkIjo0Mn0.Zx8Kq2.Lm9Pq3Rt5Vx7Zb1Nc3Md5Qf7Hg9\n< HTTP/1.1 200 OK",
        ["eyJ1c2VyX2lkIjo0Mn0.Zx8Kq2.Lm9Pq3Rt5Vx7Zb1Nc3Md5Qf7Hg9", "Lm9Pq3Rt5Vx7Zb1Nc3Md5Qf7Hg9"],
        "env_secret",
    ),
    (
        'curl -sf https://internal.acme.dev/api/v2/jobs -H "Authorization: Bearer JbueX.bEaSmaUyp6haHpmE6TCE5xC.FcuSfVZshd" -H "Accept: application/json"',
        ["JbueX.bEaSmaUyp6haHpmE6TCE5xC.FcuSfVZshd"],
        "bearer",
    ),
    (
        "> GET /v2/_catalog HTTP/1.1\n> Host: registry.acme.dev\n> Authorization: Basic ZGVwbG95LWJvdDpOMHQtYS1SM2FsLVB3IQ==\n> User-Agent: curl/8.5.0\n< HTTP/1.1 200 OK",
        ["ZGVwbG95LWJvdDpOMHQtYS1SM2FsLVB3IQ=="],
        "basic_auth",
    ),
    (
        "2024-06-11 10:02:11 INFO auth.service issued session token eyJhbGciOiAiSFMyNTYiLCAidHlwIjogIkpXVCJ9.eyJzdWIiOiAidXNlcl80ODIxIiwgIm5hbWUiOiAiVGVzdCBGaXh0dXJlIiwgImlhdCI6IDE3MTgwMDAwMDAsICJleHAiOiAxNzE4MDAzNjAwfQ.PrEA72sWMJUVwl7HDHPKFcEeZOv1w8llIqM6Zd_1iBw for user_4821",
        [
            "eyJhbGciOiAiSFMyNTYiLCAidHlwIjogIkpXVCJ9.eyJzdWIiOiAidXNlcl80ODIxIiwgIm5hbWUiOiAiVGVzdCBGaXh0dXJlIiwgImlhdCI6IDE3MTgwMDAwMDAsICJleHAiOiAxNzE4MDAzNjAwfQ.PrEA72sWMJUVwl7HDHPKFcEeZOv1w8llIqM6Zd_1iBw"
        ],
        "jwt",
    ),
    (
        'HTTP/1.1 200 OK\nContent-Type: application/json\n\n{"access_token": "eyJhbGciOiAiSFMyNTYiLCAidHlwIjogIkpXVCJ9.eyJpc3MiOiAiaHR0cHM6Ly9hdXRoLmV4YW1wbGUudGVzdCIsICJzdWIiOiAic3ZjLWluZ2VzdCIsICJhdWQiOiAiYXBpIiwgImV4cCI6IDE4OTM0NTYwMDAsICJzY29wZSI6ICJyZWFkIHdyaXRlIn0.2HN3td_VHZaBR77fw1N1D7fAuiHbdUUnS_kwkXiZFX8", "token_type": "Bearer", "expires_in": 3600}',
        [
            "eyJhbGciOiAiSFMyNTYiLCAidHlwIjogIkpXVCJ9.eyJpc3MiOiAiaHR0cHM6Ly9hdXRoLmV4YW1wbGUudGVzdCIsICJzdWIiOiAic3ZjLWluZ2VzdCIsICJhdWQiOiAiYXBpIiwgImV4cCI6IDE4OTM0NTYwMDAsICJzY29wZSI6ICJyZWFkIHdyaXRlIn0.2HN3td_VHZaBR77fw1N1D7fAuiHbdUUnS_kwkXiZFX8"
        ],
        "jwt",
    ),
    # --- Private key blocks --------------------------------------------------------------------
    (
        "$ cat deploy/id_rsa\n-----BEGIN RSA PRIVATE KEY-----\nTtvM5riija1IYLsD6c060ZGUfpDNhmMLm43B3OjdK2OLMdNJTkzc/8pRXhWNEuCb\nY+e3ZVMkfcDWKbFYV6RZc123ybgnl8LzRRIC7wQqVThu1r2WZxfm2rBvqZptcSyE\nXcg+8+8oeNu9Jchmw9pUNlWbDrio9ToGG1/ONo64osfMnadO70l5EEM43Onetvxr\n-----END RSA PRIVATE KEY-----\n$ chmod 600 deploy/id_rsa",
        [
            "TtvM5riija1IYLsD6c060ZGUfpDNhmMLm43B3OjdK2OLMdNJTkzc/8pRXhWNEuCb",
            "Y+e3ZVMkfcDWKbFYV6RZc123ybgnl8LzRRIC7wQqVThu1r2WZxfm2rBvqZptcSyE",
            "Xcg+8+8oeNu9Jchmw9pUNlWbDrio9ToGG1/ONo64osfMnadO70l5EEM43Onetvxr",
        ],
        "private_key",
    ),
    (
        "Output of `cat ~/.ssh/id_ed25519` (truncated to 400 chars):\n-----BEGIN OPENSSH PRIVATE KEY-----\nN3lFuKkowLpFPPwmSVMmEExYuemQxHLdXxr6X4wH7QoY+lM4egoBy4oz6+njrxSQN5ONc8\n/4DpdZDr3MMT9362mwmfaC2sNl8ZZh4Ul41Evtj5n9CgkIWnvvvfiC5qvbDUxdpZYVlYbB\n5IXxquus9jYXqY/PYkSn+wkndOZSQ3GQ8IjiFffhiUE9TtBxufRyYFE1DkEkcebg4YPEKT\n905bFzu0on",
        [
            "N3lFuKkowLpFPPwmSVMmEExYuemQxHLdXxr6X4wH7QoY+lM4egoBy4oz6+njrxSQN5ONc8",
            "/4DpdZDr3MMT9362mwmfaC2sNl8ZZh4Ul41Evtj5n9CgkIWnvvvfiC5qvbDUxdpZYVlYbB",
            "5IXxquus9jYXqY/PYkSn+wkndOZSQ3GQ8IjiFffhiUE9TtBxufRyYFE1DkEkcebg4YPEKT",
            "905bFzu0on",
        ],
        "private_key",
    ),
    (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: ingress-tls\nstringData:\n  tls.key: |\n    -----BEGIN EC PRIVATE KEY-----\n    /BkuSzwPMg2eXVVwnDeV3yQjVPhfafwTfg+uWMvnH+iG9te7WmA9i7w8QJUr4Z/4\n    w3WNq8PDJ5w+OcmKYDF2l9ubwqcQD72XQvUs55ZaRb8LHTE/2ihz1Am2eEsgJ6uk\n    -----END EC PRIVATE KEY-----",
        [
            "/BkuSzwPMg2eXVVwnDeV3yQjVPhfafwTfg+uWMvnH+iG9te7WmA9i7w8QJUr4Z/4",
            "w3WNq8PDJ5w+OcmKYDF2l9ubwqcQD72XQvUs55ZaRb8LHTE/2ihz1Am2eEsgJ6uk",
        ],
        "private_key",
    ),
    (
        "$ gpg --export-secret-keys --armor alice@example.com\n-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nfx6zErjulaLO3RHCdxFmZPCvFcwEqhGuYyGTo7LjmL4bHyVZJ20fdb+d7deor8fu\nA9dvhMzHW64eplsjRRkqclBdx7HI4VgmfkqiEZIKQ60ZGZbJ6ajz3HUlVOJO2v5n\n=Tr53\n-----END PGP PRIVATE KEY BLOCK-----",
        [
            "fx6zErjulaLO3RHCdxFmZPCvFcwEqhGuYyGTo7LjmL4bHyVZJ20fdb+d7deor8fu",
            "A9dvhMzHW64eplsjRRkqclBdx7HI4VgmfkqiEZIKQ60ZGZbJ6ajz3HUlVOJO2v5n",
        ],
        "private_key",
    ),
    (
        'ssl_key = """-----BEGIN ENCRYPTED PRIVATE KEY-----\n/dbVN91htMJrA0vixC0CAwnOWQR/PL1HJX3zFeTNH8ubaqsP/JAdn+xYh1WHya4E\nukD1PkGwS1YrspXWTkJ3jnOblovC5ZQwffklGT1L7gDHw2uNMGFvZDUj5gpmzzes\n-----END ENCRYPTED PRIVATE KEY-----"""',
        [
            "/dbVN91htMJrA0vixC0CAwnOWQR/PL1HJX3zFeTNH8ubaqsP/JAdn+xYh1WHya4E",
            "ukD1PkGwS1YrspXWTkJ3jnOblovC5ZQwffklGT1L7gDHw2uNMGFvZDUj5gpmzzes",
        ],
        "private_key",
    ),
    # --- Passwords in URLs and connection strings ----------------------------------------------
    (
        '$ psql "postgresql://app_user:N7x!pQ2vL9@db.prod.internal:5432/orders" -c "select count(*) from orders"\npsql: error: connection to server at "db.prod.internal" (10.0.4.12), port 5432 failed: timeout expired',
        ["N7x!pQ2vL9"],
        "url_password",
    ),
    (
        'File "/app/db.py", line 8, in <module>\n    engine = create_engine("mysql+pymysql://root:Hx8$kq2Lm@127.0.0.1:3306/shop", pool_pre_ping=True)\nsqlalchemy.exc.OperationalError: (pymysql.err.OperationalError) (1045, "Access denied for user \'root\'@\'172.17.0.1\'")',
        ["Hx8$kq2Lm"],
        "url_password",
    ),
    (
        "MONGODB_URI=mongodb+srv://svc-reader:Vb3qT9zKp1Lx@cluster0.ab1cd.mongodb.net/prod?retryWrites=true&w=majority",
        ["Vb3qT9zKp1Lx"],
        "url_password",
    ),
    (
        "redis.exceptions.ConnectionError: Error 111 connecting to redis://:c0rr3ct-h0rse-77@cache.internal:6379/0. Connection refused.",
        ["c0rr3ct-h0rse-77"],
        "url_password",
    ),
    (
        "celery worker -A tasks --broker=amqp://queue_admin:Q4r!z8Wd@rabbit.local:5672/%2F --loglevel=info",
        ["Q4r!z8Wd"],
        "url_password",
    ),
    (
        'appsettings.Production.json: "OrdersDb": "Server=tcp:acme.database.windows.net,1433;Initial Catalog=orders;User ID=svc_orders;Password=Jq7#vT2m!Lp9;Encrypt=True;"',
        ["Jq7#vT2m!Lp9"],
        "password",
    ),
    (
        "conn = pyodbc.connect('Driver={PostgreSQL Unicode};Server=db;Database=reports;Uid=report;Pwd=Rpt-2024-xK9q;')",
        ["Rpt-2024-xK9q"],
        "password",
    ),
    (
        "AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=acmelogs;AccountKey=69UnFWMGAGtFhIkLcwSc4Bbb97ETYxWltz10nlNjQRfXpd2RJ2QJ2RqCg0F6Km2bz2V9KW53hpGYg15JSQkOZt==;EndpointSuffix=core.windows.net",
        [
            "69UnFWMGAGtFhIkLcwSc4Bbb97ETYxWltz10nlNjQRfXpd2RJ2QJ2RqCg0F6Km2bz2V9KW53hpGYg15JSQkOZt=="
        ],
        "env_secret",
    ),
    # --- .env, export, docker -e, yaml, flags ---------------------------------------------------
    (
        "$ cat .env\nDEBUG=false\nDB_HOST=localhost\nDB_PASSWORD=hunter2-Staging\nSECRET_KEY=django-insecure-b@gg%kl(c6ky@k1gmr0k*_&%nkvbg5b*-$!vwj2s15^d*mc6m^\nALLOWED_HOSTS=*",
        [
            "hunter2-Staging",
            "django-insecure-b@gg%kl(c6ky@k1gmr0k*_&%nkvbg5b*-$!vwj2s15^d*mc6m^",
        ],
        "password",
    ),
    (
        "docker run -d --name pg -e POSTGRES_USER=app -e POSTGRES_PASSWORD=pg-L0cal-9931 -p 5432:5432 postgres:16-alpine",
        ["pg-L0cal-9931"],
        "password",
    ),
    (
        "services:\n  db:\n    image: mysql:8.0\n    environment:\n      - MYSQL_ROOT_PASSWORD=r00tPassw0rd!\n      - MYSQL_PASSWORD=appPw_2024\n    ports:\n      - 3306:3306",
        ["r00tPassw0rd!", "appPw_2024"],
        "password",
    ),
    (
        'apiVersion: v1\nkind: Secret\nmetadata:\n  name: backend\ntype: Opaque\nstringData:\n  password: "Zx9!mK2#pL"\n  api-token: 7gkZ5BDvY0Cm89RXHXA9aJUathZ8iltTwo1QIJs1N1N3w6Vfc2TNNZ0appsqtlED',
        ["Zx9!mK2#pL", "7gkZ5BDvY0Cm89RXHXA9aJUathZ8iltTwo1QIJs1N1N3w6Vfc2TNNZ0appsqtlED"],
        "password",
    ),
    (
        "./scripts/deploy.sh --env prod --api-key=5f2b8c1e9d7a4b3c0e6f --password 'P@ss w0rd 99' --verbose",
        ["5f2b8c1e9d7a4b3c0e6f", "P@ss w0rd 99"],
        "password",
    ),
    (
        "$ mysql -h db.internal -u admin -pS3cr3tPw_42 shop < dump.sql\nERROR 1045 (28000): Access denied for user 'admin'@'10.0.3.7' (using password: YES)",
        ["S3cr3tPw_42"],
        "password",
    ),
    (
        "$ curl -u deploy:Tr0ub4dor-and-3 https://ci.acme.dev/job/api/build -X POST\n<html><body>Authentication required</body></html>",
        ["Tr0ub4dor-and-3"],
        "password",
    ),
    (
        "$ sshpass -p 'Wint3r!sComing' ssh ops@10.0.0.12 'sudo systemctl restart api'",
        ["Wint3r!sComing"],
        "password",
    ),
    (
        "$ cat ~/.netrc\nmachine api.heroku.com\n  login ops@acme.dev\n  password 453678ef-5b9d-aef9-4360-cdf8cbe798ed",
        ["453678ef-5b9d-aef9-4360-cdf8cbe798ed"],
        "password",
    ),
    (
        'resp = requests.get("https://backup.acme.dev/api/snapshots", auth=("svc-backup", "Bk-Up!2024-q3"), timeout=10)',
        ["Bk-Up!2024-q3"],
        "password",
    ),
    (
        "spring.datasource.url=jdbc:postgresql://db:5432/app\nspring.datasource.username=app\nspring.datasource.password=Spr1ngPw!88",
        ["Spr1ngPw!88"],
        "password",
    ),
    (
        "<servers>\n  <server>\n    <id>nexus</id>\n    <username>deployer</username>\n    <password>XmlPw#2024-nx</password>\n  </server>\n</servers>",
        ["XmlPw#2024-nx"],
        "password",
    ),
    (
        'Outputs:\n\ndb_endpoint = "orders.c1x2y3.eu-west-1.rds.amazonaws.com"\ndb_password = "Tf-Gen3rated-Pw-91x"',
        ["Tf-Gen3rated-Pw-91x"],
        "password",
    ),
    (
        "APP_ENV=production\nAPP_KEY=base64:Kozm7xB12kzwNRxOTZYNiAxfr5aAzr3l1vwBQnnfbUU=\nAPP_DEBUG=false",
        ["Kozm7xB12kzwNRxOTZYNiAxfr5aAzr3l1vwBQnnfbUU="],
        "env_secret",
    ),
    (
        "> GET /dashboard HTTP/1.1\n> Cookie: sessionid=wlm4byv98xd1mjgwk6b6brahywtq81zt; csrftoken=9ZjlsskgHSY9fMIygIE1jw58cyeTCfZP4IAC2Fg\n< HTTP/1.1 302 Found",
        ["wlm4byv98xd1mjgwk6b6brahywtq81zt", "9ZjlsskgHSY9fMIygIE1jw58cyeTCfZP4IAC2Fg"],
        "env_secret",
    ),
    # --- Chat messages and unlabelled high-entropy strings -------------------------------------
    (
        "my password is Tr0ub4dor&3 - can you check why the login test still fails?",
        ["Tr0ub4dor&3"],
        "password",
    ),
    (
        "the webhook secret from the dashboard is ktoKQ59nqjm12xpayETgTvSW6cQGS09U0wn7dhTp, put it in the config please",
        ["ktoKQ59nqjm12xpayETgTvSW6cQGS09U0wn7dhTp"],
        "high_entropy",
    ),
    (
        "fyi the staging api token is 38AibNyyurlG, it expires on friday",
        ["38AibNyyurlG"],
        "env_secret",
    ),
    (
        'db, err := sql.Open("mysql", "orders_rw:Gx7#pL2q@tcp(10.0.2.15:3306)/orders?parseTime=true")',
        ["Gx7#pL2q"],
        "url_password",
    ),
    (
        "DEBUG httpx: GET https://api.internal.acme.dev/v1/me headers={'Accept': 'application/json'} auth=Bearer Fb0EkjKWREhbiGjlvhkTp3SKQOo6",
        ["Fb0EkjKWREhbiGjlvhkTp3SKQOo6"],
        "bearer",
    ),
    (
        "bot is 4677637484:AAHt1E0RKqhiZzmZBzj5lFZJCIDiJJKMp0B - wire it to the alerts channel",
        ["AAHt1E0RKqhiZzmZBzj5lFZJCIDiJJKMp0B"],
        "telegram_token",
    ),
    (
        '{"service": "ingest", "region": "eu-west-1", "signingMaterial": "UjgjfXudzTQXGqi+x8PikL2t/yiRbiMdYN2fFq6oCoS=", "retries": 3}',
        ["UjgjfXudzTQXGqi+x8PikL2t/yiRbiMdYN2fFq6oCoS="],
        "high_entropy",
    ),
    (
        "INFO  worker: registered runner with cluster, join value 1UFyVlYONgEUsYx1ihEeGY14iiMyD5FN+kvkdgK7FI0= (keep this safe)",
        ["1UFyVlYONgEUsYx1ihEeGY14iiMyD5FN+kvkdgK7FI0="],
        "high_entropy",
    ),
]

BENIGN: list[tuple[str, list[str]]] = [
    # flags of other commands, colon lines that are no .pgpass entry, names and dates beside a
    # secret's name, dotted names in code, keys of data, runs of A, test file names
    (
        "find . -name '*.log' | xargs -P 4 gzip; grep -P warnings build.log; redis-cli monitor | tee -a redismonitor.log; cp -P src dst",
        ["-P 4 gzip", "-P warnings", "-a redismonitor.log", "-P src"],
    ),
    ("Use redis-cli -a flag only when the server requires AUTH", ["-a flag only"]),
    (
        "mac 00:11:22:33:44:55 ip fe80:0:0:0:204:61ff:fe9d:f156\nfd00:1:2:3:abcd\napp.py:42:main:ERROR:timeout\nlocalhost:6379:0:OK:PONG",
        [
            "00:11:22:33:44:55",
            "fe80:0:0:0:204:61ff:fe9d:f156",
            "fd00:1:2:3:abcd",
            "ERROR:timeout",
            "OK:PONG",
        ],
    ),
    (
        'errors.add("PASSWORD", "is too short (minimum is 8 characters)")\nconfig.define("API_KEY", "https://api.example.com/v1/keys")\ncheck("password", "2023-10-01T12:00:00Z")',
        [
            "is too short (minimum is 8 characters)",
            "https://api.example.com/v1/keys",
            "2023-10-01T12:00:00Z",
        ],
    ),
    (
        "token = self.oauth2Client.credentials\npassword: config.database.mysql8Password",
        ["self.oauth2Client.credentials", "config.database.mysql8Password"],
    ),
    (
        'image_key = "sha256:9f8e7d6c5b4a39281f2e3d4c5b6a7980"\nrequest_key = "req_01HXYZ8K2M3N4P5Q6R7S8T9V0W"\njob_key = "job-2024-05-01T10:00:00Z"',
        [
            "sha256:9f8e7d6c5b4a39281f2e3d4c5b6a7980",
            "req_01HXYZ8K2M3N4P5Q6R7S8T9V0W",
            "job-2024-05-01T10:00:00Z",
        ],
    ),
    ("zeros: " + "A" * 120, ["A" * 120]),
    (
        "pytest tests/test_0a1b2c3d4e5f60718293a4b5c6d7e8f9012.py",
        ["test_0a1b2c3d4e5f60718293a4b5c6d7e8f9012.py"],
    ),
    ("az login --service-principal -u $APP_ID -p /home/ci/cert.pem", ["/home/ci/cert.pem"]),
    (
        "- name: LOG_LEVEL\n  value: debug\n- name: API_KEY\n  valueFrom:\n    secretKeyRef:\n      name: api-keys",
        ["value: debug", "api-keys"],
    ),
    (
        "ping6 fe80:0:0:0:1 and localhost:5432:*:postgres:postgres",
        ["fe80:0:0:0:1", "postgres:postgres"],
    ),
    (
        'hash_password("correct horse battery staple") and echo hello | grep h',
        ["correct horse battery staple"],
    ),
    # a Stripe publishable key: made to ship in client code (Stripe's docs), no secret
    (
        "// checkout.js\nconst stripe = Stripe('pk_live_vPKaHMPTlLyuiCB9rcRb1aNjXZyKIcVBDyY59PNWqDDdnJfOmi1mI5SIWFUEuStfbLJjTydZVy1HIPUNsDW437HCx15jG40qPqz');\nconst elements = stripe.elements();",
        [
            "pk_live_vPKaHMPTlLyuiCB9rcRb1aNjXZyKIcVBDyY59PNWqDDdnJfOmi1mI5SIWFUEuStfbLJjTydZVy1HIPUNsDW437HCx15jG40qPqz"
        ],
    ),
    (
        'Traceback (most recent call last):\n  File "/home/alice/proj/src/app.py", line 42, in <module>\n    main()\n  File "/home/alice/proj/.venv/lib/python3.11/site-packages/httpx/_client.py", line 1054, in send\n    raise ConnectError(exc) from exc\nhttpx.ConnectError: [Errno 111] Connection refused',
        [
            "/home/alice/proj/src/app.py",
            "/home/alice/proj/.venv/lib/python3.11/site-packages/httpx/_client.py",
            "ConnectError",
        ],
    ),
    (
        r"PS C:\Users\bob\source\repos\Api> python -m pytest C:\Users\bob\source\repos\Api\tests\test_orders.py",
        [r"C:\Users\bob\source\repos\Api\tests\test_orders.py"],
    ),
    (
        "Module not found: Error: Can't resolve './Button' in '/home/alice/proj/node_modules/@acme/ui-kit/dist/esm/components/ButtonGroup'",
        ["/home/alice/proj/node_modules/@acme/ui-kit/dist/esm/components/ButtonGroup"],
    ),
    (
        "$ git log --oneline -3\n9fceb02 Fix session handling in the auth middleware\ne83c516 Add retries to the upload client\n1a410ef Bump version to 2.3.1",
        ["9fceb02", "e83c516", "1a410ef", "session handling in the auth middleware"],
    ),
    (
        "Can you revert e83c5163316f89bfbde7d9ab23ca2e25604af290? It broke the password reset flow.",
        ["e83c5163316f89bfbde7d9ab23ca2e25604af290", "password reset flow"],
    ),
    (
        "Why does `sha256sum dist/app.tar.gz` print a4d451ec23463726f72c43d64c710968f6b602cd653b4de8adee1b556240a829 on CI but something else locally?",
        ["a4d451ec23463726f72c43d64c710968f6b602cd653b4de8adee1b556240a829"],
    ),
    (
        "md5 of the upload: 415290769594460e2e485922904f345d, sha1: 395df8f7c51f007019cb30201c49e884b46b92fa",
        ["415290769594460e2e485922904f345d", "395df8f7c51f007019cb30201c49e884b46b92fa"],
    ),
    (
        '{"request_id": "5f0c2a9e-1b7d-4c3e-9a8f-2d6b4e1c7a90", "trace_id": "b7ad6b7169203331", "status": 502}',
        ["5f0c2a9e-1b7d-4c3e-9a8f-2d6b4e1c7a90", "b7ad6b7169203331"],
    ),
    (
        "Pulling nginx@sha256:b29814cf5792e684cd75d6a7fce7a67a11887e312f87ca2ac2496d81f365ff72 ... Digest: sha256:b29814cf5792e684cd75d6a7fce7a67a11887e312f87ca2ac2496d81f365ff72",
        ["sha256:b29814cf5792e684cd75d6a7fce7a67a11887e312f87ca2ac2496d81f365ff72"],
    ),
    (
        '"node_modules/lodash": {\n  "version": "4.17.21",\n  "resolved": "https://registry.npmjs.org/lodash/-/lodash-4.17.21.tgz",\n  "integrity": "sha512-4eipQcXKIyxUbbIGeZYZgqJuOzO4o5YJ8O7uexuc/2zoBRcHDrlbfHdHZ4kT3jGCXIQ7leHfswipqcuT87e4Kg=="\n}',
        [
            "sha512-4eipQcXKIyxUbbIGeZYZgqJuOzO4o5YJ8O7uexuc/2zoBRcHDrlbfHdHZ4kT3jGCXIQ7leHfswipqcuT87e4Kg==",
            "https://registry.npmjs.org/lodash/-/lodash-4.17.21.tgz",
        ],
    ),
    (
        "github.com/stretchr/testify v1.8.4 h1:LdSPyzZHWfJNDb2LiRaFMF2jc7SoevE+HYt6crtiuWk=",
        ["h1:LdSPyzZHWfJNDb2LiRaFMF2jc7SoevE+HYt6crtiuWk="],
    ),
    (
        "Installed numpy==1.26.4 scipy==1.13.1 torch==2.3.1+cpu; node v20.11.1; release v2.3.1-rc.2+build.5",
        ["numpy==1.26.4", "torch==2.3.1+cpu", "v20.11.1", "v2.3.1-rc.2+build.5"],
    ),
    (
        "See https://github.com/acme/widgets/pull/1234/files#diff-3f2a and clone with git@github.com:acme/widgets.git or ssh://git@github.com/acme/widgets.git",
        [
            "https://github.com/acme/widgets/pull/1234/files#diff-3f2a",
            "git@github.com:acme/widgets.git",
            "ssh://git@github.com/acme/widgets.git",
        ],
    ),
    (
        "FAILED tests/test_auth.py::test_user_can_reset_password_with_expired_token - AssertionError\nFAILED tests/test_auth.py::test_refresh_token_rotation_invalidates_previous_session",
        [
            "test_user_can_reset_password_with_expired_token",
            "test_refresh_token_rotation_invalidates_previous_session",
        ],
    ),
    (
        "class AbstractSingletonProxyFactoryBean2 extends getXMLHttpRequestForIEAndSafariBrowsers implements UserAccountSettingsControllerV2Test {}",
        [
            "AbstractSingletonProxyFactoryBean2",
            "getXMLHttpRequestForIEAndSafariBrowsers",
            "UserAccountSettingsControllerV2Test",
        ],
    ),
    (
        'import os\nfrom getpass import getpass\n\npassword = os.environ["DB_PASSWORD"]\nadmin_password=getpass()\napi_key = os.getenv("OPENAI_API_KEY", "")\ntoken = request.headers.get("Authorization")',
        [
            'password = os.environ["DB_PASSWORD"]',
            "admin_password=getpass()",
            'api_key = os.getenv("OPENAI_API_KEY", "")',
            'token = request.headers.get("Authorization")',
        ],
    ),
    (
        "def login(username: str, password: str) -> Token:\n    api_key: Optional[str] = None\n    return client.login(username=username, password=password, api_key=api_key)",
        [
            "password: str",
            "api_key: Optional[str] = None",
            "password=password, api_key=api_key",
        ],
    ),
    (
        'SECRET_KEY = env("DJANGO_SECRET_KEY")\nDATABASES["default"]["PASSWORD"] = config("DB_PASSWORD")\nAWS_SECRET_ACCESS_KEY = settings.AWS_SECRET_ACCESS_KEY',
        [
            'SECRET_KEY = env("DJANGO_SECRET_KEY")',
            'config("DB_PASSWORD")',
            "AWS_SECRET_ACCESS_KEY = settings.AWS_SECRET_ACCESS_KEY",
        ],
    ),
    (
        "The password reset flow fails when the token is expired; the auth middleware returns 401 and the session cookie is dropped. The secret is probably rotated.",
        ["password reset flow", "the token is expired", "The secret is probably rotated"],
    ),
    (
        "Error: invalid password: must be at least 12 characters\nWarning: token: expired, please log in again",
        ["invalid password: must be at least 12 characters", "token: expired"],
    ),
    (
        '{"usage": {"prompt_tokens": 1234, "completion_tokens": 56, "total_tokens": 1290}, "max_tokens": 4096, "token_count": 88}',
        ['"prompt_tokens": 1234', '"max_tokens": 4096', '"token_count": 88'],
    ),
    (
        '{"eos_token": "</s>", "pad_token": "<pad>", "bos_token": "<s>", "mask_token": "[MASK]", "model_max_length": 512}',
        ['"eos_token": "</s>"', '"pad_token": "<pad>"', '"mask_token": "[MASK]"'],
    ),
    (
        'export API_TOKEN="$(vault kv get -field=token secret/ci)"\ncurl -H "Authorization: Bearer $GITHUB_TOKEN" https://api.github.com/user\n      password: ${{ secrets.DB_PASSWORD }}',
        [
            'API_TOKEN="$(vault kv get -field=token secret/ci)"',
            "Bearer $GITHUB_TOKEN",
            "password: ${{ secrets.DB_PASSWORD }}",
        ],
    ),
    (
        "export GOOGLE_APPLICATION_CREDENTIALS=/home/alice/keys/acme-analytics-service-account.json\nKUBECONFIG=~/.kube/config-staging",
        [
            "/home/alice/keys/acme-analytics-service-account.json",
            "~/.kube/config-staging",
        ],
    ),
    (
        "$ echo SGVsbG8gd29ybGQsIHRoaXMgaXMgYSB0ZXN0IG1lc3NhZ2U= | base64 -d\nHello world, this is a test message",
        ["SGVsbG8gd29ybGQsIHRoaXMgaXMgYSB0ZXN0IG1lc3NhZ2U="],
    ),
    (
        '<img alt="dot" src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==">',
        [
            "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
        ],
    ),
    (
        "docker run --rm -p 8080:80 -u 1000:1000 -e DEBUG=true -e LOG_LEVEL=info -v $PWD:/srv nginx:1.25-alpine",
        ["-p 8080:80", "-u 1000:1000", "DEBUG=true", "nginx:1.25-alpine"],
    ),
    (
        "$ kubectl logs api-7d8f9c6b5-x2k4p -n prod --since=1h | grep -i auth\nauth: session refreshed for user 4821 in 12ms",
        ["api-7d8f9c6b5-x2k4p", "session refreshed for user 4821"],
    ),
    (
        "Loading /home/alice/.cache/huggingface/hub/models--sentence-transformers--all-MiniLM-L6-v2/snapshots/603863e3988380844e02ea62d89b3f9c92fe8627/model.safetensors",
        [
            "/home/alice/.cache/huggingface/hub/models--sentence-transformers--all-MiniLM-L6-v2/snapshots/603863e3988380844e02ea62d89b3f9c92fe8627/model.safetensors"
        ],
    ),
    (
        "pip install --require-hashes -r requirements.txt\nrequests==2.32.3 --hash=sha256:2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881",
        ["--hash=sha256:2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"],
    ),
    (
        "interface LoginRequest {\n  username: string;\n  password?: string;\n  token: string | null;\n  rememberMe: boolean;\n}",
        ["password?: string;", "token: string | null;"],
    ),
    (
        "# .env.example\nOPENAI_API_KEY=your-api-key-here\nDATABASE_URL=postgres://USER:PASSWORD@HOST:5432/DB\nSTRIPE_SECRET_KEY=<your stripe secret key>",
        [
            "OPENAI_API_KEY=your-api-key-here",
            "postgres://USER:PASSWORD@HOST:5432/DB",
            "STRIPE_SECRET_KEY=<your stripe secret key>",
        ],
    ),
    (
        'private static final String PASSWORD_FIELD = "password";\nprivate static final int TOKEN_TTL_SECONDS = 3600;\nconst resetPasswordTokenExpirationMinutes = 1440;',
        [
            'PASSWORD_FIELD = "password"',
            "TOKEN_TTL_SECONDS = 3600",
            "resetPasswordTokenExpirationMinutes = 1440",
        ],
    ),
    (
        "auth:\n  enabled: true\n  password_min_length: 12\n  token_ttl: 3600\n  session_timeout: 30m\n  token_url: https://auth.acme.dev/oauth/token\n  api_key_env: OPENAI_API_KEY",
        [
            "password_min_length: 12",
            "token_ttl: 3600",
            "session_timeout: 30m",
            "token_url: https://auth.acme.dev/oauth/token",
            "api_key_env: OPENAI_API_KEY",
        ],
    ),
    (
        "arn:aws:iam::123456789012:role/service-role/AmazonSageMaker-ExecutionRole-20240101T000000 cannot assume role",
        [
            "arn:aws:iam::123456789012:role/service-role/AmazonSageMaker-ExecutionRole-20240101T000000"
        ],
    ),
    (
        "$ cat ~/.ssh/id_ed25519.pub\nssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIwbL132Zn4T8+WvXX2HdNK44cjXQVIoSTsp5svg/LRTl alice@laptop",
        [
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIwbL132Zn4T8+WvXX2HdNK44cjXQVIoSTsp5svg/LRTl alice@laptop"
        ],
    ),
    (
        "thread 'main' panicked at src/storage/segment_writer.rs:214:9:\nindex out of bounds: the len is 3 but the index is 7\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n   0: 0x7f3a2c1b4e90 - std::panicking::begin_panic_handler",
        ["src/storage/segment_writer.rs:214:9", "0x7f3a2c1b4e90", "RUST_BACKTRACE=1"],
    ),
    (
        'for key, value in sorted(config.items(), key=lambda kv: kv[0]):\n    logger.info("setting %s=%s", key, value)\ncache_key = f"user:{user_id}:profile"\nsort_key=itemgetter(\'created_at\')',
        [
            "key=lambda kv: kv[0]",
            'cache_key = f"user:{user_id}:profile"',
            "sort_key=itemgetter('created_at')",
        ],
    ),
    (
        "const token = jwt.sign(payload, process.env.JWT_SECRET, { expiresIn: '1h' });\nconst secret = config.get('auth.secret');\nlet password = req.body.password;",
        [
            "jwt.sign(payload, process.env.JWT_SECRET",
            "secret = config.get('auth.secret')",
            "password = req.body.password",
        ],
    ),
    (
        "$ docker login -u alice --password-stdin registry.acme.dev < ~/.docker-token\n$ git push -u origin main\n$ python -u train.py --epochs 3\n$ mysql -u root -p",
        [
            "docker login -u alice --password-stdin registry.acme.dev",
            "git push -u origin main",
            "python -u train.py",
            "mysql -u root -p",
        ],
    ),
    (
        'Send `Authorization: Bearer <token>` on every call, e.g. curl -H "Authorization: Bearer ${API_TOKEN}" https://api.acme.dev/v1/me',
        ["Authorization: Bearer <token>", "Authorization: Bearer ${API_TOKEN}"],
    ),
    (
        'password := os.Getenv("DB_PASSWORD")\nlet token = env::var("GITHUB_TOKEN")?;\n$secret = getenv(\'APP_SECRET\');',
        [
            'password := os.Getenv("DB_PASSWORD")',
            'let token = env::var("GITHUB_TOKEN")?;',
            "$secret = getenv('APP_SECRET');",
        ],
    ),
    (
        "my password is wrong again, can you reset it? also the api key is missing from the request and the token was revoked yesterday",
        ["my password is wrong again", "the api key is missing", "the token was revoked yesterday"],
    ),
    (
        "model = AutoModel.from_pretrained('Qwen/Qwen3-Next-80B-A3B-Instruct')  # design notes: https://docs.google.com/document/d/1RWrH-3wLEpzR9kCS6gGBNen_-Fs-8PVbWWFE5AcgeWE/edit",
        [
            "Qwen/Qwen3-Next-80B-A3B-Instruct",
            "https://docs.google.com/document/d/1RWrH-3wLEpzR9kCS6gGBNen_-Fs-8PVbWWFE5AcgeWE/edit",
        ],
    ),
    (
        'EXPIRED_TOKEN = "expired_token"\nIMAGE_TOKEN = "<|image|>"\nfirst_pass = not hasattr(self, "coef_")\ntoken.map = tableLines = [startLine, 0]\nPUBLIC_KEY_TOKEN = "1fc8b3b9a1e18e3b"',
        [
            'EXPIRED_TOKEN = "expired_token"',
            'IMAGE_TOKEN = "<|image|>"',
            "first_pass = not hasattr",
            "token.map = tableLines",
            '"1fc8b3b9a1e18e3b"',
        ],
    ),
]
