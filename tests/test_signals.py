"""Rule-based session signals: test outcomes, errors, commands and the cues in user messages."""

from __future__ import annotations

import pytest

# The modules, not their names: pytest would collect an imported `test_outcome` as a test.
from reos_memory.squirrel.text import (
    error_output,
    frustration,
    replies,
    runner_output,
    shell_commands,
    success,
)

# ---------------------------------------------------------------------------------------------
# Runner outputs (written for these tests in the shapes the tools print)

PYTEST_FAILED = """\
============================= test session starts ==============================
platform linux -- Python 3.12.3, pytest-8.2.0, pluggy-1.5.0
rootdir: /home/dev/invoice-app
configfile: pyproject.toml
collected 4 items

tests/test_totals.py ..F.                                                [100%]

=================================== FAILURES ===================================
___________________________ test_total_with_discount ___________________________

    def test_total_with_discount():
        invoice = Invoice(lines=[Line(price=100, qty=2)], discount=0.1)
>       assert invoice.total() == 180
E       AssertionError: assert 200.0 == 180
E        +  where 200.0 = <bound method Invoice.total of Invoice(...)>()

tests/test_totals.py:21: AssertionError
=========================== short test summary info ============================
FAILED tests/test_totals.py::test_total_with_discount - AssertionError: assert 200.0 == 180
===================== 1 failed, 3 passed, 1 warning in 0.12s =====================
"""

PYTEST_PASSED = """\
============================= test session starts ==============================
platform linux -- Python 3.12.3, pytest-8.2.0, pluggy-1.5.0
collected 3 items

tests/test_totals.py ...                                                 [100%]

=============================== warnings summary ===============================
tests/test_totals.py::test_rounding
  /home/dev/invoice-app/invoice.py:40: DeprecationWarning: use Decimal
-- Docs: https://docs.pytest.org/en/stable/how-to/capture-warnings.html
======================== 3 passed, 1 warning in 0.12s =========================
"""

PYTEST_QUIET = """\
........                                                                 [100%]
8 passed in 0.05s
"""

PYTEST_COLLECTION_ERROR = """\
==================================== ERRORS ====================================
____________________ ERROR collecting tests/test_client.py _____________________
ImportError while importing test module '/home/dev/app/tests/test_client.py'.
tests/test_client.py:3: in <module>
    import httpx
E   ModuleNotFoundError: No module named 'httpx'
=========================== short test summary info ============================
ERROR tests/test_client.py
!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
=============================== 1 error in 0.21s ===============================
"""

PYTEST_NOTHING = """\
collected 0 items

============================ no tests ran in 0.01s =============================
"""

JEST_FAILED = """\
PASS src/utils/format.test.js
FAIL src/cart/total.test.js
  ● cart total \u203a applies the discount

    expect(received).toBe(expected) // Object.is equality

    Expected: 180
    Received: 200

      12 |     const cart = makeCart([{ price: 100, qty: 2 }], 0.1);
    > 13 |     expect(total(cart)).toBe(180);
         |                         ^

      at Object.toBe (src/cart/total.test.js:13:25)

Test Suites: 1 failed, 1 passed, 2 total
Tests:       1 failed, 3 passed, 4 total
Snapshots:   0 total
Time:        1.204 s
Ran all test suites.
"""

JEST_PASSED = """\
PASS src/utils/format.test.js
PASS src/cart/total.test.js

Test Suites: 2 passed, 2 total
Tests:       4 passed, 4 total
Snapshots:   0 total
Time:        0.981 s, estimated 1 s
Ran all test suites.
"""

VITEST_FAILED = """\

 RUN  v1.6.0 /home/dev/shop

 \u276f src/cart.test.ts (3 tests | 1 failed) 12ms
   \u00d7 cart > applies the discount
     → expected 200 to be 180 // Object.is equality

⎯⎯⎯⎯⎯⎯⎯ Failed Tests 1 ⎯⎯⎯⎯⎯⎯⎯

 FAIL  src/cart.test.ts > cart > applies the discount
AssertionError: expected 200 to be 180 // Object.is equality
 \u276f src/cart.test.ts:14:25

⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯[1/1]⎯

 Test Files  1 failed | 2 passed (3)
      Tests  1 failed | 15 passed (16)
   Start at  09:14:02
   Duration  1.12s (transform 210ms, setup 0ms, collect 340ms, tests 45ms)

"""

VITEST_PASSED = """\

 RUN  v1.6.0 /home/dev/shop

 ✓ src/cart.test.ts (3 tests) 9ms
 ✓ src/format.test.ts (13 tests) 15ms

 Test Files  2 passed (2)
      Tests  16 passed (16)
   Start at  09:16:40
   Duration  0.98s (transform 190ms, setup 0ms, collect 300ms, tests 24ms)

"""

# FORCE_COLOR output: the same lines wrapped in escape codes
VITEST_PASSED_COLOURED = (
    "\x1b[2m Test Files \x1b[22m \x1b[1m\x1b[32m2 passed\x1b[39m\x1b[22m\x1b[90m (2)\x1b[39m\n"
    "\x1b[2m      Tests \x1b[22m \x1b[1m\x1b[32m16 passed\x1b[39m\x1b[22m\x1b[90m (16)\x1b[39m\n"
)

GO_PASSED = """\
ok  \tgithub.com/acme/kv/store\t0.012s
ok  \tgithub.com/acme/kv/wire\t(cached)
?   \tgithub.com/acme/kv/cmd/kvd\t[no test files]
"""

GO_VERBOSE_PASSED = """\
=== RUN   TestPut
--- PASS: TestPut (0.00s)
=== RUN   TestDelete
--- PASS: TestDelete (0.00s)
PASS
ok  \tgithub.com/acme/kv/store\t0.010s
"""

GO_FAILED = """\
--- FAIL: TestParseDuration (0.00s)
    parse_test.go:27: ParseDuration("1h30m") = 1h0m0s, want 1h30m0s
FAIL
FAIL\tgithub.com/acme/kv/config\t0.004s
ok  \tgithub.com/acme/kv/store\t0.011s
FAIL
"""

CARGO_PASSED = """\
   Compiling kv v0.1.0 (/home/dev/kv)
    Finished `test` profile [unoptimized + debuginfo] target(s) in 1.02s
     Running unittests src/lib.rs (target/debug/deps/kv-3f2a1c)

running 3 tests
test tests::put_then_get ... ok
test tests::delete_missing ... ok
test tests::overwrite ... ok

test result: ok. 3 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

   Doc-tests kv

running 0 tests

test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
"""

CARGO_FAILED = """\
running 2 tests
test tests::overwrite ... FAILED
test tests::put_then_get ... ok

failures:

---- tests::overwrite stdout ----
thread 'tests::overwrite' panicked at src/lib.rs:41:9:
assertion `left == right` failed
  left: Some("old")
 right: Some("new")
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace


failures:
    tests::overwrite

test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

error: test failed, to rerun pass `--lib`
"""

CARGO_COMPILE_ERROR = """\
   Compiling kv v0.1.0 (/home/dev/kv)
error[E0308]: mismatched types
  --> src/lib.rs:12:20
   |
12 |         self.len = items;
   |                    ^^^^^ expected `usize`, found `Vec<u8>`
   |
   = note: expected type `usize`
            found struct `Vec<u8>`

For more information about this error, try `rustc --explain E0308`.
error: could not compile `kv` (lib test) due to 1 previous error
"""

MIX_PASSED = """\
Compiling 2 files (.ex)
Generated shop app
Running ExUnit with seed: 412093, max_cases: 16

............
Finished in 0.4 seconds (0.2s async, 0.2s sync)
2 doctests, 10 tests, 0 failures
"""

MIX_FAILED = """\
Running ExUnit with seed: 90211, max_cases: 16

...

  1) test total/1 applies the discount (Shop.CartTest)
     test/shop/cart_test.exs:18
     Assertion with == failed
     code:  assert Cart.total(cart) == 180
     left:  200
     right: 180
     stacktrace:
       test/shop/cart_test.exs:21: (test)

.
Finished in 0.3 seconds (0.1s async, 0.2s sync)
5 tests, 1 failure
"""

MIX_COMPILE_ERROR = (
    "Compiling 1 file (.ex)\n"
    "\n"
    "== Compilation error in file test/shop/cart_test.exs ==\n"
    "** (CompileError) test/shop/cart_test.exs:4: undefined function build_cart/1 "
    "(there is no such import)\n"
)

UNITTEST_PASSED = """\
..........
----------------------------------------------------------------------
Ran 10 tests in 0.004s

OK
"""

UNITTEST_FAILED = """\
..F.
======================================================================
FAIL: test_round_trip (tests.test_codec.CodecTest.test_round_trip)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/home/dev/codec/tests/test_codec.py", line 14, in test_round_trip
    self.assertEqual(decode(encode(b"\\x00")), b"\\x00")
AssertionError: b'' != b'\\x00'

----------------------------------------------------------------------
Ran 4 tests in 0.002s

FAILED (failures=1)
"""

LS_OUTPUT = """\
total 48
drwxr-xr-x  6 dev dev 4096 May  2 10:11 .
drwxr-xr-x 18 dev dev 4096 May  2 09:58 ..
-rw-r--r--  1 dev dev 1234 May  2 10:11 error_handler.py
-rw-r--r--  1 dev dev  880 May  2 10:02 errors.log
-rw-r--r--  1 dev dev  412 May  2 10:05 ErrorBoundary.tsx
-rw-r--r--  1 dev dev 2048 May  2 10:07 test_errors.py
drwxr-xr-x  2 dev dev 4096 May  2 10:01 tests
"""


# ---------------------------------------------------------------------------------------------
# is_test_command


@pytest.mark.parametrize(
    "command",
    [
        "pytest",
        "pytest -x -q tests/test_cart.py",
        ".venv/bin/pytest -k discount",
        "python -m pytest tests/",
        "python3 -X dev -m pytest",
        "uv run pytest -q",
        "poetry run pytest",
        "tox -e py312",
        "nox -s tests",
        "python -m unittest discover",
        "python manage.py test shop",
        "npm test",
        "npm run test:unit",
        "npm test -- --run src/cart.test.ts -t 'applies the discount'",
        "pnpm test",
        "pnpm --filter web test",
        "yarn test --watch=false",
        "bun test",
        "npx jest src/cart",
        "npx vitest run",
        "pnpm vitest run",
        "jest --ci",
        "vitest",
        "go test ./...",
        "go test -run TestParse ./config",
        "cargo test",
        "cargo nextest run",
        "cargo +nightly test --lib",
        "mix test",
        "MIX_ENV=test mix test test/shop/cart_test.exs",
        "make test",
        "make -C backend test-unit",
        "bundle exec rspec spec/models",
        "vendor/bin/phpunit",
        "dotnet test",
        "mvn -q test",
        "./gradlew :app:test",
        "cd /home/dev/shop && npm test 2>&1 | tail -20",
        "mix compile --warnings-as-errors && mix test | tail -5",
        "bash -lc 'cd /repo && pytest -q'",
        "/bin/zsh -lc npm test -- --run src/cart.test.ts",
        "timeout 300 go test ./...",
    ],
)
def test_test_runners_are_recognised(command):
    assert shell_commands.is_test_command(command)


@pytest.mark.parametrize(
    "command",
    [
        None,
        "",
        "ls -la tests/",
        "cat pytest.ini",
        "pip install pytest",
        "python -m pip install pytest",
        "git commit -m 'run pytest in CI'",
        'echo "npm test"',
        "test -f package.json",
        "npm install",
        "npm run build",
        "go build ./...",
        "cargo build --release",
        "mix compile",
        "vim tests/test_cart.py",
        "rg -n pytest pyproject.toml",
    ],
)
def test_other_commands_are_not_test_runs(command):
    assert not shell_commands.is_test_command(command)


# ---------------------------------------------------------------------------------------------
# test_outcome


@pytest.mark.parametrize(
    ("command", "output", "exit_code", "expected"),
    [
        ("pytest", PYTEST_FAILED, 1, "failed"),
        ("pytest", PYTEST_PASSED, 0, "passed"),
        ("pytest -q", PYTEST_QUIET, 0, "passed"),
        ("pytest", PYTEST_COLLECTION_ERROR, 2, "failed"),
        ("npx jest", JEST_FAILED, 1, "failed"),
        ("npx jest", JEST_PASSED, 0, "passed"),
        ("npm test", VITEST_FAILED, 1, "failed"),
        ("npm test", VITEST_PASSED, 0, "passed"),
        ("npx vitest run", VITEST_PASSED_COLOURED, 0, "passed"),
        ("go test ./...", GO_PASSED, 0, "passed"),
        ("go test -v ./store", GO_VERBOSE_PASSED, 0, "passed"),
        ("go test ./...", GO_FAILED, 1, "failed"),
        ("cargo test", CARGO_PASSED, 0, "passed"),
        ("cargo test", CARGO_FAILED, 101, "failed"),
        ("mix test", MIX_PASSED, 0, "passed"),
        ("mix test", MIX_FAILED, 2, "failed"),
        ("python -m unittest", UNITTEST_PASSED, 0, "passed"),
        ("python -m unittest", UNITTEST_FAILED, 1, "failed"),
    ],
)
def test_runner_summaries(command, output, exit_code, expected):
    assert runner_output.test_outcome(command, output, exit_code) == expected


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        (PYTEST_FAILED, "failed"),
        (PYTEST_PASSED, "passed"),
        (JEST_FAILED, "failed"),
        (VITEST_PASSED, "passed"),
        (GO_FAILED, "failed"),
        (CARGO_PASSED, "passed"),
        (MIX_FAILED, "failed"),
        (UNITTEST_FAILED, "failed"),
    ],
)
def test_a_summary_is_enough_without_command_or_exit_code(output, expected):
    # a background task's output is read later, with no command or exit code at hand
    assert runner_output.test_outcome(None, output, None) == expected


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("5 examples, 0 failures\n", "passed"),
        ("Finished in 0.8 seconds\n5 examples, 2 failures, 1 pending\n", "failed"),
        ("\nOK (12 tests, 30 assertions)\n", "passed"),
        ("FAILURES!\nTests: 12, Assertions: 30, Failures: 2.\n", "failed"),
        (
            "Passed!  - Failed:     0, Passed:    42, Skipped:     0, Total:    42, "
            "Duration: 310 ms - Shop.Tests.dll (net8.0)\n",
            "passed",
        ),
        (
            "Failed!  - Failed:     1, Passed:    41, Skipped:     0, Total:    42, "
            "Duration: 330 ms - Shop.Tests.dll (net8.0)\n",
            "failed",
        ),
        (
            "[INFO] Tests run: 12, Failures: 0, Errors: 0, Skipped: 1\n[INFO] BUILD SUCCESS\n",
            "passed",
        ),
        ("[ERROR] Tests run: 12, Failures: 1, Errors: 0, Skipped: 0\n", "failed"),
        ("12 tests completed, 2 failed\n\nFAILURE: Build failed with an exception.\n", "failed"),
        ("\n  3 passing (12ms)\n  1 failing\n", "failed"),
        ("\n  3 passing (12ms)\n", "passed"),
        (
            "\n 3 pass\n 0 fail\n 6 expect() calls\nRan 3 tests across 1 files. [18.00ms]\n",
            "passed",
        ),
        ("\n 2 pass\n 1 fail\nRan 3 tests across 1 files. [21.00ms]\n", "failed"),
        ("     Summary [   0.008s] 3 tests run: 3 passed, 0 skipped\n", "passed"),
        ("     Summary [   0.011s] 3 tests run: 2 passed, 1 failed, 0 skipped\n", "failed"),
        (
            "  py312: OK (3.10=setup[1.20]+cmd[1.90] seconds)\n"
            "  congratulations :) (3.2 seconds)\n",
            "passed",
        ),
        ("  py312: FAIL code 1 (2.05 seconds)\n  evaluation failed :( (2.1 seconds)\n", "failed"),
        ("nox > Session tests-3.12 was successful in 4 seconds.\n", "passed"),
        ("nox > Session tests-3.12 failed.\n", "failed"),
    ],
)
def test_other_runners(output, expected):
    assert runner_output.test_outcome(None, output, None) == expected


@pytest.mark.parametrize(
    "command", ["./scripts/ci.sh", "hatch run test:cov", "./dev check", "just verify"]
)
def test_wrappers_that_may_run_the_suite_are_read(command):
    assert runner_output.test_outcome(command, PYTEST_FAILED, 1) == "failed"
    assert runner_output.test_outcome(command, PYTEST_PASSED, 0) == "passed"


def test_any_failing_summary_fails_the_run():
    # tox runs the suite under two interpreters; one of them fails
    output = (
        "py311: commands[0]> pytest -q\n....\n4 passed in 0.10s\n"
        "py312: commands[0]> pytest -q\n..F.\n1 failed, 3 passed in 0.11s\n"
    )
    assert runner_output.test_outcome("tox", output, 1) == "failed"
    assert runner_output.test_outcome("tox", output, None) == "failed"


def test_an_early_failure_beyond_the_scanned_tail_is_caught_by_the_exit_code():
    packages = "".join(f"ok  \tgithub.com/acme/mono/pkg{i:03d}\t0.0{i % 10}s\n" for i in range(260))
    output = "FAIL\tgithub.com/acme/mono/auth\t0.020s\n" + packages
    assert len(output) > 8000
    assert runner_output.test_outcome("go test ./...", output, 1) == "failed"
    assert runner_output.test_outcome("go test ./...", packages, 0) == "passed"


@pytest.mark.parametrize(
    ("command", "output", "exit_code"),
    [
        ("pytest", PYTEST_NOTHING, 5),
        ("go test ./...", "ok  \tgithub.com/acme/kv\t0.004s [no tests to run]\n", 0),
        ("mix test", "Finished in 0.0 seconds\n0 tests, 0 failures\n", 0),
        ("python -m unittest", "\n---------\nRan 0 tests in 0.000s\n\nNO TESTS RAN\n", 5),
        ("npx jest", "No tests found, exiting with code 1\nRun with `--passWithNoTests`\n", 1),
    ],
)
def test_a_run_of_no_tests_has_no_outcome(command, output, exit_code):
    assert runner_output.test_outcome(command, output, exit_code) is None


@pytest.mark.parametrize(
    ("command", "output", "exit_code", "expected"),
    [
        ("pytest -x", "bash: pytest: command not found\n", 127, "failed"),
        ("cargo test", CARGO_COMPILE_ERROR, 101, "failed"),
        ("mix test", MIX_COMPILE_ERROR, 1, "failed"),
        ("mix test", MIX_COMPILE_ERROR, None, "failed"),
        ("npm test", "\n> shop@1.0.0 test\n> node scripts/check.js\n\nall good\n", 0, "passed"),
        ("pytest -q > /tmp/pytest.log", "", 0, "passed"),
        ("go test ./...", "", None, None),
    ],
)
def test_without_a_summary_the_exit_code_decides_for_test_commands(
    command, output, exit_code, expected
):
    assert runner_output.test_outcome(command, output, exit_code) == expected


@pytest.mark.parametrize(
    ("command", "output", "exit_code"),
    [
        ("ls -la", LS_OUTPUT, 0),
        (None, LS_OUTPUT, None),
        ("cat /tmp/pytest.log", PYTEST_PASSED, 0),
        ("tail -5 /tmp/go-test.log", GO_FAILED, 0),
        ("git log -3", "commit 1a2b3c\n\n    Fix flaky cart test: 5 tests, 2 failures on CI\n", 0),
        (None, "commit 1a2b3c\n\n    Fix flaky cart test: 5 tests, 2 failures on CI\n", None),
        ("npm run build", "> shop@1.0.0 build\n> next build\n\n✓ Compiled successfully\n", 0),
        ("npm run build", "Error: Cannot find module 'next'\n", 1),
        (None, "Reviewed the PR: 3 passed checks, 1 failed lint job.\n", None),
        ("python scripts/nightly_report.py", "Last night:\n===== 3 passed in 0.12s =====\n", 0),
        (
            "mix test test/shop/cart_test.exs 2>&1",
            "Command running in background with ID: b81f2c. Output is being written to: "
            "/tmp/claude/tasks/b81f2c.output",
            None,
        ),
    ],
)
def test_outputs_that_are_not_test_runs(command, output, exit_code):
    assert runner_output.test_outcome(command, output, exit_code) is None


# ---------------------------------------------------------------------------------------------
# looks_like_error and error_line

_SSL_CAUSE = (
    "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: "
    "unable to get local issuer certificate (_ssl.c:1006)"
)
SSL_TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/home/dev/app/.venv/lib/python3.12/site-packages/urllib3/connectionpool.py", '
    "line 467, in _make_request\n"
    "    self._validate_conn(conn)\n"
    f"ssl.SSLCertVerificationError: {_SSL_CAUSE}\n"
    "\n"
    "During handling of the above exception, another exception occurred:\n"
    "\n"
    "Traceback (most recent call last):\n"
    '  File "/home/dev/app/sync.py", line 31, in <module>\n'
    '    response = session.get(f"{BASE_URL}/v1/orders", timeout=10)\n'
    '  File "/home/dev/app/.venv/lib/python3.12/site-packages/requests/adapters.py", '
    "line 620, in send\n"
    "    raise SSLError(e, request=request)\n"
    "requests.exceptions.SSLError: HTTPSConnectionPool(host='api.example.com', port=443): "
    "Max retries exceeded with url: /v1/orders "
    f"(Caused by SSLError(SSLCertVerificationError(1, '{_SSL_CAUSE}')))\n"
)

MODULE_NOT_FOUND = """\
Traceback (most recent call last):
  File "/home/dev/app/main.py", line 3, in <module>
    import yaml
ModuleNotFoundError: No module named 'yaml'
"""

NODE_TYPE_ERROR = """\
/home/dev/shop/src/server.js:14
  const port = config.server.port;
                             ^

TypeError: Cannot read properties of undefined (reading 'port')
    at Object.<anonymous> (/home/dev/shop/src/server.js:14:30)
    at Module._compile (node:internal/modules/cjs/loader:1358:14)
    at node:internal/main/run_main_module:28:49

Node.js v20.12.2
"""

NPM_404 = """\
npm ERR! code E404
npm ERR! 404 Not Found - GET https://registry.npmjs.org/left-padd - Not found
npm ERR! 404
npm ERR! 404  'left-padd@*' is not in this registry.
npm ERR! 404 Note that you can also install from a
npm ERR! 404 tarball, folder, http url, or git url.

npm ERR! A complete log of this run can be found in:
npm ERR!     /home/dev/.npm/_logs/2024-05-02T10_11_12_000Z-debug-0.log
"""

GO_PANIC = """\
panic: runtime error: index out of range [3] with length 3

goroutine 1 [running]:
main.lastItem(...)
\t/home/dev/kv/main.go:9
main.main()
\t/home/dev/kv/main.go:14 +0x1d
exit status 2
"""

GIT_PUSH_REJECTED = """\
To github.com:acme/kv.git
 ! [rejected]        main -> main (fetch first)
error: failed to push some refs to 'github.com:acme/kv.git'
hint: Updates were rejected because the remote contains work that you do not
hint: have locally.
"""

TSC_ERRORS = """\
src/api/client.ts(12,7): error TS2322: Type 'string' is not assignable to type 'number'.
src/api/client.ts(30,1): error TS2304: Cannot find name 'fetchJson'.
"""

PIP_RESOLVER_NOTE = (
    "Successfully installed httpx-0.27.0\n"
    "ERROR: pip's dependency resolver does not currently take into account all the packages "
    "that are installed.\n"
)

SOURCE_LISTING = """\
from dataclasses import dataclass


class ParseError(Exception):
    pass


@dataclass
class Result:
    value: int | None = None
    error: str | None = None


def parse(text: str) -> Result:
    try:
        return Result(value=int(text))
    except ValueError:
        return Result(error=f"not a number: {text}")
"""

ACCESS_LOG = """\
127.0.0.1 - - [02/May/2024:10:11:12] "GET /static/error.png HTTP/1.1" 200 1532
127.0.0.1 - - [02/May/2024:10:11:13] "GET /api/errors?page=2 HTTP/1.1" 200 88
"""

CARGO_WARNINGS = """\
warning: unused variable: `len`
  --> src/lib.rs:3:9
   |
3  |     let len = items.len();
   |         ^^^ help: if this is intentional, prefix it with an underscore: `_len`
   |
warning: `kv` (lib) generated 1 warning
    Finished `dev` profile [unoptimized + debuginfo] target(s) in 0.61s
"""


@pytest.mark.parametrize(
    "output",
    [
        SSL_TRACEBACK,
        MODULE_NOT_FOUND,
        NODE_TYPE_ERROR,
        NPM_404,
        GO_PANIC,
        GIT_PUSH_REJECTED,
        TSC_ERRORS,
        CARGO_COMPILE_ERROR,
        MIX_COMPILE_ERROR,
        "bash: pnpm: command not found\n",
        "fatal: not a git repository (or any of the parent directories): .git\n",
        "<tool_use_error>File has not been read yet. Read it first before writing to it."
        "</tool_use_error>",
        "Exit code 128\nfatal: could not read Username for 'https://github.com'\n",
        "ls: cannot access 'build/': No such file or directory\n",
        "Error: Cannot find module 'express'\nRequire stack:\n- /home/dev/shop/index.js\n",
        "KeyboardInterrupt\n",
        PIP_RESOLVER_NOTE,
    ],
)
def test_error_outputs(output):
    assert error_output.looks_like_error(output)


@pytest.mark.parametrize(
    "output", [SSL_TRACEBACK, NODE_TYPE_ERROR, NPM_404, GO_PANIC, TSC_ERRORS, CARGO_COMPILE_ERROR]
)
def test_errors_behind_a_pipe_count_even_with_exit_code_zero(output):
    # `python sync.py 2>&1 | tail -20` exits with tail's 0
    assert error_output.looks_like_error(output, 0)


@pytest.mark.parametrize(
    "output",
    [LS_OUTPUT, SOURCE_LISTING, ACCESS_LOG, CARGO_WARNINGS, PYTEST_PASSED, MIX_PASSED, ""],
)
def test_ordinary_outputs_are_not_errors(output):
    assert not error_output.looks_like_error(output)
    assert not error_output.looks_like_error(output, 0)


def test_weak_error_shapes_need_a_missing_exit_code():
    # pip prints this "ERROR" and still exits 0: the exit code is the better witness
    assert error_output.looks_like_error(PIP_RESOLVER_NOTE, None)
    assert not error_output.looks_like_error(PIP_RESOLVER_NOTE, 0)


def test_exit_codes():
    assert error_output.looks_like_error("Compiling...\n", 2)
    assert error_output.looks_like_error("", 2)
    # `grep -q`, `test -f`: exit 1 and silence is a "no", not an error
    assert not error_output.looks_like_error("", 1)
    assert not error_output.looks_like_error("  \n", 1)
    assert error_output.looks_like_error("diff: missing operand\n", 1)


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        (MODULE_NOT_FOUND, "ModuleNotFoundError: No module named 'yaml'"),
        (NODE_TYPE_ERROR, "TypeError: Cannot read properties of undefined (reading 'port')"),
        (NPM_404, "npm ERR! 404 Not Found - GET https://registry.npmjs.org/left-padd - Not found"),
        (CARGO_COMPILE_ERROR, "error[E0308]: mismatched types"),
        (GIT_PUSH_REJECTED, "error: failed to push some refs to 'github.com:acme/kv.git'"),
        (
            "fatal: not a git repository (or any of the parent directories): .git\n",
            "fatal: not a git repository (or any of the parent directories): .git",
        ),
        ("bash: pnpm: command not found\n", "bash: pnpm: command not found"),
        ("zsh: command not found: pnpm\n", "zsh: command not found: pnpm"),
        (GO_PANIC, "panic: runtime error: index out of range [3] with length 3"),
        (PYTEST_FAILED, "AssertionError: assert 200.0 == 180"),
        (PYTEST_COLLECTION_ERROR, "ModuleNotFoundError: No module named 'httpx'"),
        ("E       assert 2 == 3\nE        +  where 2 = add(1, 1)\n", "assert 2 == 3"),
        (VITEST_FAILED, "AssertionError: expected 200 to be 180 // Object.is equality"),
        (CARGO_FAILED, "thread 'tests::overwrite' panicked at src/lib.rs:41:9:"),
        (UNITTEST_FAILED, "AssertionError: b'' != b'\\x00'"),
        (
            MIX_COMPILE_ERROR,
            "** (CompileError) test/shop/cart_test.exs:4: undefined function build_cart/1 "
            "(there is no such import)",
        ),
        (MIX_FAILED, "Assertion with == failed"),
        (
            TSC_ERRORS,
            "src/api/client.ts(12,7): error TS2322: "
            "Type 'string' is not assignable to type 'number'.",
        ),
        (
            "<tool_use_error>File has not been read yet. Read it first before writing to it."
            "</tool_use_error>",
            "File has not been read yet. Read it first before writing to it.",
        ),
        (
            "> Build error occurred\n[TypeError: generate is not a function]\n",
            "TypeError: generate is not a function",
        ),
        (
            "ls: cannot access 'build/': No such file or directory\n",
            "ls: cannot access 'build/': No such file or directory",
        ),
        ("Done in 0.42s.\n", None),
        ("", None),
    ],
)
def test_error_line(output, expected):
    assert error_output.error_line(output) == expected


def test_error_line_takes_the_final_exception_and_caps_it():
    line = error_output.error_line(SSL_TRACEBACK)
    assert line is not None
    assert line.startswith(
        "requests.exceptions.SSLError: HTTPSConnectionPool(host='api.example.com', port=443): "
        "Max retries exceeded"
    )
    assert len(line) == 200
    assert line.endswith("…")


def test_error_line_in_a_long_output_reads_its_head_and_tail():
    noise = "".join(f"   Compiling crate{i} v0.1.{i}\n" for i in range(2000))
    assert error_output.error_line(CARGO_COMPILE_ERROR + noise) == "error[E0308]: mismatched types"
    assert error_output.error_line(noise + MODULE_NOT_FOUND) == (
        "ModuleNotFoundError: No module named 'yaml'"
    )


# ---------------------------------------------------------------------------------------------
# normalize_command


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("cd /home/dev/shop && npm test 2>&1 | tail -n 20", "npm test"),
        ("  pytest   -x   tests/  ", "pytest -x tests/"),
        ("FOO=1 BAR=x pytest -q", "pytest -q"),
        ("bash -lc 'cd /repo && pytest -q 2>&1 | tail -30'", "pytest -q"),
        ("/bin/zsh -lc npm test -- --run src/cart.test.ts", "npm test -- --run src/cart.test.ts"),
        ('npm test 2>&1 | grep -E "FAIL|Error"', "npm test"),
        ('go test ./... ; echo "exit=$?"', "go test ./..."),
        ("cargo build 2>/dev/null | head -50 | less", "cargo build"),
        ("timeout 120 mix test", "mix test"),
        ('cd "/home/dev/my shop" && make test', "make test"),
        ("sudo npm install -g pnpm", "sudo npm install -g pnpm"),
        ("git commit -m 'fix: handle | in names'", "git commit -m 'fix: handle | in names'"),
        ("python gen.py > out.txt", "python gen.py > out.txt"),
    ],
)
def test_normalize_command(command, expected):
    assert shell_commands.normalize_command(command) == expected


def test_reruns_of_one_command_normalize_alike():
    first = shell_commands.normalize_command("pytest -x tests/test_cart.py 2>&1 | tail -20")
    again = shell_commands.normalize_command("cd /repo && pytest  -x tests/test_cart.py | tail -50")
    assert first == again
    assert first != shell_commands.normalize_command("pytest -x tests/test_cart.py -k discount")


# ---------------------------------------------------------------------------------------------
# frustration


@pytest.mark.parametrize(
    ("text", "level"),
    [
        ("Add a --verbose flag to the export command", "none"),
        ("Can you update the README with the new API URL?", "none"),
        ("What does parse_rows do with empty lines?", "none"),
        ("what's wrong with the parser?", "none"),
        ("Thanks! Please update CLAUDE.md for the current changes", "none"),
        ("[Request interrupted by user for tool use]", "none"),
        ("please check PATH, HOME and USER in the CI env", "none"),
        ("hmm that's not right", "mild"),
        ("still not working", "mild"),
        ("try again", "mild"),
        ("it still doesn't work", "mild"),
        ("that didn't help, same error", "mild"),
        ("nope", "mild"),
        ("this is the third time I ask for this", "moderate"),
        ("why does this keep failing", "moderate"),
        ("come on", "moderate"),
        ("you keep adding print statements", "moderate"),
        ("I already told you to use pnpm", "moderate"),
        ("it's broken again!!", "moderate"),
        ("why???", "moderate"),
        ("wtf", "severe"),
        ("damn, still failing", "severe"),
        ("what the hell did you do to the migrations", "severe"),
        ("are you kidding me", "severe"),
        ("this is ridiculous", "severe"),
        ("I give up", "severe"),
        ("STOP", "severe"),
        ("STOP CHANGING THE TESTS", "severe"),
        ("NOT WORKING", "severe"),
        ("why is it failing again!!!", "severe"),
    ],
)
def test_frustration(text, level):
    assert frustration.frustration(text) == level


def test_relief_is_not_anger():
    assert frustration.frustration("holy shit it works now") == "mild"


def test_pasted_logs_do_not_shout():
    text = "still failing:\n```\nERROR BUILD FAILED\nFATAL TOTAL FAILURE!!!\n```"
    assert frustration.frustration(text) == "mild"


def test_useless_code_is_no_insult():
    assert frustration.frustration("remove the useless import in cart.py") == "none"
    assert frustration.frustration("this is useless") == "severe"


def test_combine_frustration():
    assert frustration.FRUSTRATION_ORDER == ("none", "mild", "moderate", "severe")
    assert frustration.combine_frustration([]) == "none"
    assert frustration.combine_frustration(["mild", "none"]) == "mild"
    assert frustration.combine_frustration(["mild", "severe", "moderate"]) == "severe"
    assert frustration.combine_frustration(iter(frustration.FRUSTRATION_ORDER[:3])) == "moderate"


# ---------------------------------------------------------------------------------------------
# is_correction


@pytest.mark.parametrize(
    "text",
    [
        "no",
        "No, use pnpm",
        "nope, the other file",
        "not that one, the one in src/",
        "not pnpm, npm",
        "wrong file",
        "that's wrong",
        "that's not what I asked",
        "I said use pnpm",
        "I meant the staging database",
        "don't touch the tests",
        "do not commit yet",
        "stop",
        "Stop editing the lockfile",
        "actually, use postgres",
        "use httpx instead",
        "can you do it with pnpm instead?",
        "revert that",
        "undo",
        "wait, that's the prod db",
        "why did you delete the migration?",
        "you deleted the fixtures",
    ],
)
def test_corrections(text):
    assert replies.is_correction(text)


@pytest.mark.parametrize(
    "text",
    [
        "no problem",
        "no worries, thanks",
        "not bad",
        "not sure, what do you think?",
        "Nothing else, thanks",
        "notify me when done",
        "ok",
        "Please add tests for the parser",
        "actually that works great",
        "Wait for the build before pushing",
    ],
)
def test_not_corrections(text):
    assert not replies.is_correction(text)


# ---------------------------------------------------------------------------------------------
# is_continuation and is_new_task


@pytest.mark.parametrize(
    "text",
    [
        "ok",
        "yes",
        "go ahead",
        "continue",
        "👍",
        "thanks, now also add a test for it",
        "still failing",
        "try again",
        "what about the tests?",
        "no, use pnpm",
        "the second one",
        "option 2",
        "2",
        "it crashes on empty input",
        "that worked, thanks",
        "did you push?",
        "next step",
        "hmm",
    ],
)
def test_continuations(text):
    assert replies.is_continuation(text)
    assert not replies.is_new_task(text)


@pytest.mark.parametrize(
    "text",
    [
        "next",
        "Next: the CSV export",
        "new task: add OAuth login",
        "now let's write the docs",
        "ok, now let's add rate limiting",
        "moving on",
        "great. Moving on to the billing page",
        "another thing: the CSS on mobile is off",
        "switch to the frontend",
        "unrelated: how do I rotate the logs?",
        "different question: what does the retry decorator do?",
    ],
)
def test_new_tasks(text):
    assert replies.is_new_task(text)
    assert not replies.is_continuation(text)


@pytest.mark.parametrize(
    "text",
    [
        # "also look at" may stay on the task or leave it: topic overlap decides
        "can you also look at the flaky upload test?",
        "Implement the export command",
        "mix phx.server doesnt seem to start",
    ],
)
def test_messages_without_a_boundary_cue(text):
    assert not replies.is_continuation(text)
    assert not replies.is_new_task(text)


def test_content_words():
    words = replies.content_words(
        "Can you fix the flaky upload test in tests/test_upload.py? It's failing on CI since "
        "v2.3 (3rd time) -- 42 runs"
    )
    assert words == {
        "flaky",
        "upload",
        "test",
        "tests",
        "test_upload",
        "failing",
        "since",
        "time",
        "runs",
    }
    assert replies.content_words("ok, thanks!") == set()


def test_topic_overlap():
    cart = replies.content_words("the cart total ignores the discount code")
    same = replies.content_words("discount still ignored in cart total")
    other = replies.content_words("set up OAuth login with GitHub")
    assert replies.topic_overlap(cart, same) == pytest.approx(3 / 4)
    assert replies.topic_overlap(cart, other) == 0.0
    assert replies.topic_overlap(set(), cart) == 0.0
    assert replies.topic_overlap({"cart"}, {"cart", "total", "discount"}) == 1.0


# ---------------------------------------------------------------------------------------------
# success_cue


@pytest.mark.parametrize(
    "text",
    [
        "works",
        "it works!",
        "works now, thanks",
        "that fixed it",
        "perfect",
        "great, thanks",
        "nice, thank you",
        "finally",
        "finally!",
        "yes! finally working",
        "All tests pass now",
        "LGTM",
        "that worked",
    ],
)
def test_success_cues(text):
    assert success.success_cue(text)


@pytest.mark.parametrize(
    "text",
    [
        "it still doesn't work",
        "make sure it works on windows",
        "how does this work?",
        "does it work?",
        "it works?",
        "perfect, but the tests still fail",
        "not perfect yet",
        "great, now it's broken again",
        "it works on my machine but not in CI",
        "Finally, add a changelog entry",
        "Please make the export work with big files",
        "thanks",
    ],
)
def test_not_success_cues(text):
    assert not success.success_cue(text)


def test_empty_inputs():
    assert runner_output.test_outcome(None, "", None) is None
    assert not error_output.looks_like_error("")
    assert error_output.error_line("") is None
    assert shell_commands.normalize_command("") == ""
    assert frustration.frustration("") == "none"
    assert not replies.is_correction("")
    assert not replies.is_continuation("")
    assert not replies.is_new_task("")
    assert not success.success_cue("")
    assert replies.content_words("") == set()


@pytest.mark.parametrize(
    ("command", "destructive"),
    [
        ("docker volume rm shop_pgdata", True),
        ("docker system prune -af", True),
        ("cd api && rm -rf build dist", True),
        ("git push --force origin main", True),
        ("git reset --hard HEAD~1", True),
        ("git clean -fdx", True),
        ('psql "$DB" -c "DROP TABLE users"', True),
        ("kubectl delete pod web-1", True),
        ("terraform destroy -auto-approve", True),
        ("git push origin main", False),
        ("rm notes.txt", False),
        ("docker ps -a", False),
        ("ls -la && git status", False),
        ("pytest -x", False),
    ],
)
def test_destructive_commands(command: str, destructive: bool) -> None:
    from reos_memory.squirrel.text.shell_commands import is_destructive

    assert is_destructive(command) is destructive
