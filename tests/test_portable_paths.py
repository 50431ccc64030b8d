"""A writer's memory names files relative to the project and no one's home directory: it is read
by other checkouts and, shared, by a whole team (`squirrel/text/paths.py`)."""

from __future__ import annotations

import pytest

from reos_memory.squirrel.text.paths import has_home_path, portable


@pytest.mark.parametrize(
    ("text", "root", "want"),
    [
        (
            "The cache key is built in /Users/alex/work/app/src/cache.ts.",
            "/Users/alex/work/app",
            "The cache key is built in src/cache.ts.",
        ),
        ("Run `cd /srv/checkout && make check`.", "/srv/checkout", "Run `cd . && make check`."),
        (
            "Settings live in /home/bob/.config/tool.toml",
            None,
            "Settings live in ~/.config/tool.toml",
        ),
        ("Logs go to /root/.cache/app/log", None, "Logs go to ~/.cache/app/log"),
        (r"Build with C:\Users\Bob\proj\build.ps1", None, r"Build with ~\proj\build.ps1"),
        # another checkout under a home: still no user name
        (
            "Compare with /Users/alex/other/lib.go",
            "/Users/alex/work/app",
            "Compare with ~/other/lib.go",
        ),
        # not homes: left alone
        ("Use /usr/home/x, /rooted/dir and ~/x.", None, "Use /usr/home/x, /rooted/dir and ~/x."),
        ("A prefix: /srv/checkout2/a.py", "/srv/checkout", "A prefix: /srv/checkout2/a.py"),
    ],
)
def test_paths_become_portable(text: str, root: str | None, want: str) -> None:
    got = portable(text, root)
    assert got == want
    assert not has_home_path(got)


def test_home_paths_are_recognised() -> None:
    assert has_home_path("see /Users/alex/x") and has_home_path("in /home/dev/repo")
    assert not has_home_path("see /opt/home/dev and ~/repo")
