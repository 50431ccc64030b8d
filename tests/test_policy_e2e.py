"""`squirrel/policy/get` over real stdio: the shipped default, the user file and the project file
merged key by key in that order (README "Policy"), and -32015 naming the file at fault."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from harness.rpc_client import Server
from reos_memory.squirrel.memory.policy import default_text
from tests.test_squirrel_e2e import make_repo

pytestmark = pytest.mark.e2e

SHIPPED = "(shipped default)"


def _project_file(root: Path, text: str) -> Path:
    f = root / ".sqrl" / "memory_policy.toml"
    f.parent.mkdir(exist_ok=True)
    f.write_text(text)
    return f


def test_policy_layers_default_user_and_project(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    shop = make_repo(tmp_path / "shop")
    other = make_repo(tmp_path / "other")
    shipped = tomllib.loads(default_text())
    with Server(tmp_path / "m.db", env={"REOS_MEMORY_HOME": str(home)}) as srv:
        # no user file yet: the shipped default alone, as the package ships it
        got = srv.call("squirrel/policy/get", {"project_root": str(shop)})
        assert got["sources"] == [SHIPPED]
        assert got["policy"] == shipped

        # the user file in its documented default place overrides key by key
        user = home / "memory_policy.toml"
        user.write_text(
            "[promotion.default]\nmin_opportunities = 7\n\n[decay.note]\nmax_inactive_days = 10\n"
        )
        got = srv.call("squirrel/policy/get", {"project_root": str(shop)})
        assert got["sources"] == [SHIPPED, str(user)]
        pol = got["policy"]
        assert pol["promotion"]["default"]["min_opportunities"] == 7
        assert pol["decay"]["note"]["max_inactive_days"] == 10
        # the keys the user file does not name keep the shipped values
        want = shipped["promotion"]["default"]["min_use_ratio"]
        assert pol["promotion"]["default"]["min_use_ratio"] == want
        assert pol["retrieval"] == shipped["retrieval"]

        # the project file overrides the user file, for that project only
        proj = _project_file(
            shop, "[promotion.default]\nmin_opportunities = 3\n\n[protection]\nkinds = ['guard']\n"
        )
        got = srv.call("squirrel/policy/get", {"project_root": str(shop)})
        assert got["sources"] == [SHIPPED, str(user), str(proj)]
        pol = got["policy"]
        assert pol["promotion"]["default"]["min_opportunities"] == 3
        assert pol["protection"]["kinds"] == ["guard"]
        assert pol["decay"]["note"]["max_inactive_days"] == 10  # from the user file still

        other_pol = srv.call("squirrel/policy/get", {"project_root": str(other)})
        assert other_pol["sources"] == [SHIPPED, str(user)]
        assert other_pol["policy"]["promotion"]["default"]["min_opportunities"] == 7
        # without a project, the default and the user file
        assert srv.call("squirrel/policy/get", {})["sources"] == [SHIPPED, str(user)]


def test_policy_file_setting_names_the_user_file(tmp_path):
    mine = tmp_path / "elsewhere.toml"
    mine.write_text("[regret_weights]\nalpha_errors = 2.5\n")
    env = {"REOS_MEMORY_HOME": str(tmp_path / "home"), "REOS_MEMORY_POLICY_FILE": str(mine)}
    with Server(tmp_path / "m.db", env=env) as srv:
        got = srv.call("squirrel/policy/get", {})
    assert got["sources"] == [SHIPPED, str(mine)]
    assert got["policy"]["regret_weights"]["alpha_errors"] == 2.5


def test_an_invalid_policy_is_refused_naming_the_file(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    shop = make_repo(tmp_path / "shop")
    with Server(tmp_path / "m.db", env={"REOS_MEMORY_HOME": str(home)}) as srv:
        proj = _project_file(shop, "[promotion.default]\nmin_opportunitiez = 3\n")
        err = srv.error("squirrel/policy/get", {"project_root": str(shop)})
        assert err.code == -32015 and err.data["reason"] == "invalid_policy"
        assert err.data["file"] == str(proj)
        assert str(proj) in err.error["message"] and "min_opportunitiez" in err.error["message"]

        _project_file(shop, "[decay.notes]\nmax_inactive_days = 3\n")
        err = srv.error("squirrel/policy/get", {"project_root": str(shop)})
        assert err.code == -32015 and err.data["key"] == "decay.notes"

        _project_file(shop, "[retrieval]\nsimilarity_floor = 1.5\n")
        err = srv.error("squirrel/policy/get", {"project_root": str(shop)})
        assert err.code == -32015 and "similarity_floor" in err.error["message"]

        # the methods that rank by the policy refuse the same way; nothing else is hurt
        err = srv.error(
            "squirrel/get_task_context", {"project_root": str(shop), "task": "run the tests"}
        )
        assert err.code == -32015 and err.data["file"] == str(proj)
        assert srv.call("squirrel/policy/get", {})["sources"] == [SHIPPED]

        # a user file that is not TOML breaks every project, and says so
        user = home / "memory_policy.toml"
        user.write_text("[promotion.default\n")
        err = srv.error("squirrel/policy/get", {})
        assert err.code == -32015 and err.data["file"] == str(user)
        assert "not valid TOML" in err.error["message"]

        # mended files are read again: no error is remembered
        user.write_text("[promotion.default]\nmin_opportunities = 8\n")
        proj.write_text("[promotion.default]\nmin_opportunities = 4\n")
        got = srv.call("squirrel/policy/get", {"project_root": str(shop)})
        assert got["sources"] == [SHIPPED, str(user), str(proj)]
        assert got["policy"]["promotion"]["default"]["min_opportunities"] == 4
