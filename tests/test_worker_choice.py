"""Several installed workers of one name: the rule picks one for the bare name, the others stay
reachable as ``NAME@DISTRIBUTION``, ``mosaic workers list`` says which and why, and when the
rule cannot decide the error says how to choose. Never "neither loads".

Distributions are made for the test as ``*.dist-info`` directories on ``sys.path`` (what
``importlib.metadata`` reads for installed packages); their entry points name the workers of
``plugin_fixtures/fixture_twins.py``, which all call themselves ``twin``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mosaic_sdk.cli import main
from mosaic_sdk.plugins import UnknownWorkerError, WorkerUnavailableError, discover_workers
from mosaic_sdk.plugins.choice import (
    RULE_ONLY_ONE_LOADS,
    RULE_PREFERENCE,
    RULE_SDK_NATIVE,
    RULE_UNDECIDED,
    Contender,
    address,
    canonical_distribution,
    choose,
    read_preferences,
)

pytestmark = pytest.mark.usefixtures("plugin_fixtures")

NATIVE = "fixture_twins:NativeTwin"
OTHER_NATIVE = "fixture_twins:OtherNativeTwin"
UPSTREAM = "fixture_twins:upstream_twin"
OTHER_UPSTREAM = "fixture_twins:other_upstream_twin"
BROKEN = "fixture_twins:BrokenTwin"


@pytest.fixture
def install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``install(distribution, entry_point_value)``: a distribution declaring ``twin``."""
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))

    def make(distribution: str, value: str) -> None:
        info = site / f"{distribution.replace('-', '_')}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {distribution}\nVersion: 1.0\n", encoding="utf-8"
        )
        (info / "entry_points.txt").write_text(
            f"[mosaic.workers]\ntwin = {value}\n", encoding="utf-8"
        )

    return make


def discover(**environ: str) -> Any:
    # the workers installed in the test environment are not part of these cases
    return discover_workers(environ={"MOSAIC_DISABLE_WORKERS": "example,cleanrl", **environ})


def test_an_sdk_native_worker_wins_over_an_upstream_factory(install: Any) -> None:
    install("twin-native", NATIVE)
    install("twin-upstream", UPSTREAM)
    registry = discover()
    bare = registry.get("twin")
    assert bare.metadata.name == "Native Twin" and bare.name == "twin"
    choice = registry.choices["twin"]
    assert choice.rule == RULE_SDK_NATIVE and choice.chosen == "twin@twin-native"
    assert "SDK-native" in choice.reason
    assert [c.address for c in choice.others()] == ["twin@twin-upstream"]
    other = registry.get("twin@twin-upstream")  # the other one stays reachable
    assert other.style == "upstream" and other.metadata.name == "Upstream Twin"
    assert other.name == "twin@twin-upstream"  # its runs are recorded under its address
    assert registry.get("twin@twin-native") is bare
    assert registry.errors == {}


def test_the_user_preference_decides_first(install: Any) -> None:
    install("twin-native", NATIVE)
    install("twin-upstream", UPSTREAM)
    registry = discover(MOSAIC_PREFER_WORKER="twin=Twin_Upstream")  # pip's spelling rules
    assert registry.get("twin").metadata.name == "Upstream Twin"
    choice = registry.choices["twin"]
    assert choice.rule == RULE_PREFERENCE and choice.chosen == "twin@twin-upstream"
    assert "MOSAIC_PREFER_WORKER=twin=twin-upstream" in choice.reason
    assert registry.get("twin@twin-native").metadata.name == "Native Twin"


def test_a_preference_for_a_distribution_without_that_worker_is_reported(install: Any) -> None:
    install("twin-native", NATIVE)
    install("twin-upstream", UPSTREAM)
    registry = discover(MOSAIC_PREFER_WORKER="twin=not-installed")
    choice = registry.choices["twin"]
    assert choice.rule == RULE_SDK_NATIVE  # the rule goes on
    assert any("'not-installed', which provides no worker 'twin'" in n for n in choice.notes)


def test_a_malformed_preference_is_reported() -> None:
    preferences, problems = read_preferences({"MOSAIC_PREFER_WORKER": "twin, a=b"})
    assert preferences == {"a": "b"}
    assert problems and "'twin' is not NAME=DISTRIBUTION" in problems[0]


def test_a_preferred_worker_that_is_broken_makes_the_bare_name_unavailable(install: Any) -> None:
    install("twin-native", NATIVE)
    install("twin-broken", BROKEN)
    registry = discover(MOSAIC_PREFER_WORKER="twin=twin-broken")
    with pytest.raises(WorkerUnavailableError, match="this twin is broken"):
        registry.get("twin")
    assert registry.get("twin@twin-native").metadata.name == "Native Twin"


def test_the_only_one_that_loads_is_chosen(install: Any) -> None:
    install("twin-upstream", UPSTREAM)
    install("twin-broken", BROKEN)
    registry = discover()
    assert registry.get("twin").metadata.name == "Upstream Twin"
    choice = registry.choices["twin"]
    assert choice.rule == RULE_ONLY_ONE_LOADS and choice.reason == "the only one that loads"
    [broken] = choice.others()
    assert broken.address == "twin@twin-broken" and "this twin is broken" in str(broken.error)
    with pytest.raises(WorkerUnavailableError, match="this twin is broken"):
        registry.get("twin@twin-broken")


@pytest.mark.parametrize(
    ("first", "second", "why"),
    [
        (NATIVE, OTHER_NATIVE, "2 of them are SDK-native workers"),
        (UPSTREAM, OTHER_UPSTREAM, "2 of them are upstream-style factories"),
    ],
)
def test_when_the_rule_cannot_decide_the_error_says_how_to_choose(
    install: Any, first: str, second: str, why: str
) -> None:
    install("twin-a", first)
    install("twin-b", second)
    registry = discover()
    err = registry.errors["twin"]
    assert err.error_type == "DuplicateWorkerName"
    assert why in err.message
    assert "MOSAIC_PREFER_WORKER=twin=DISTRIBUTION (one of: twin-a, twin-b)" in err.message
    assert "twin@twin-a, twin@twin-b" in err.message
    assert registry.choices["twin"].rule == RULE_UNDECIDED
    # both still load, each by its address
    names = {registry.get(a).metadata.name for a in ("twin@twin-a", "twin@twin-b")}
    assert len(names) == 2
    decided = discover(MOSAIC_PREFER_WORKER="twin=twin-b")
    assert decided.get("twin").metadata.name == registry.get("twin@twin-b").metadata.name


def test_when_none_loads_each_error_stays_with_its_address(install: Any) -> None:
    install("twin-a", BROKEN)
    install("twin-b", BROKEN)
    registry = discover()
    assert "none of them loads" in registry.errors["twin"].message
    for name in ("twin@twin-a", "twin@twin-b"):
        with pytest.raises(WorkerUnavailableError, match="this twin is broken"):
            registry.get(name)


def test_two_entry_points_from_one_source_cannot_be_told_apart() -> None:
    registry = discover(
        MOSAIC_DISABLE_PLUGIN_AUTOLOAD="1", MOSAIC_PLUGINS=f"twin={NATIVE},twin={UPSTREAM}"
    )
    err = registry.errors["twin"]
    assert err.error_type == "DuplicateWorkerName"
    assert "cannot be told apart" in err.message and "MOSAIC_PLUGINS" in err.message


def test_an_address_in_disable_workers_hides_one_contender(install: Any) -> None:
    install("twin-a", NATIVE)
    install("twin-b", OTHER_NATIVE)
    registry = discover(MOSAIC_DISABLE_WORKERS="example,cleanrl,twin@Twin_A")
    assert registry.get("twin").metadata.name == "Other Native Twin"
    assert "twin" not in registry.choices  # one left: nothing to choose


def test_any_worker_is_reachable_by_its_address() -> None:
    registry = discover_workers(environ={})
    example = registry.get("example")
    assert registry.get("example@mosaic-worker-example") is example
    assert registry.get("example@Mosaic_Worker.Example") is example
    with pytest.raises(UnknownWorkerError):
        registry.get("example@another-distribution")


def test_the_installed_example_and_a_module_of_the_same_name() -> None:
    """What used to make both unusable: now the installed one is chosen, the other named."""
    registry = discover_workers(environ={"MOSAIC_PLUGINS": "example=fixture_workers:GoodWorker"})
    assert registry.get("example").distribution == "mosaic-worker-example"
    assert registry.choices["example"].rule == RULE_ONLY_ONE_LOADS  # GoodWorker says "good"
    with pytest.raises(WorkerUnavailableError, match="worker_type is 'good'"):
        registry.get("example@mosaic-plugins")


def test_workers_list_json_shows_the_choice(
    install: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    install("twin-native", NATIVE)
    install("twin-upstream", UPSTREAM)
    monkeypatch.setenv("MOSAIC_DISABLE_WORKERS", "example,cleanrl")
    assert main(["workers", "list", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    bare = rows["twin"]
    assert bare["ok"] and bare["distribution"] == "twin-native"
    assert bare["choice"]["chosen"] == "twin@twin-native"
    assert bare["choice"]["rule"] == RULE_SDK_NATIVE
    assert [c["address"] for c in bare["choice"]["contenders"]] == [
        "twin@twin-native",
        "twin@twin-upstream",
    ]
    other = rows["twin@twin-upstream"]
    assert other["ok"] and other["alternative_of"] == "twin" and other["style"] == "upstream"


def test_workers_list_text_says_which_and_why(
    install: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    install("twin-native", NATIVE)
    install("twin-upstream", UPSTREAM)
    monkeypatch.setenv("MOSAIC_DISABLE_WORKERS", "example,cleanrl")
    monkeypatch.setenv("COLUMNS", "250")
    assert main(["workers", "list"]) == 0
    out = capsys.readouterr().out
    assert "chosen" in out and "SDK-native" in out
    assert "twin@twin-upstream" in out and "not chosen" in out
    assert "MOSAIC_PREFER_WORKER" in out


def test_workers_list_text_shows_how_to_choose_when_undecided(
    install: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    install("twin-a", NATIVE)
    install("twin-b", OTHER_NATIVE)
    monkeypatch.setenv("MOSAIC_DISABLE_WORKERS", "example,cleanrl")
    monkeypatch.setenv("COLUMNS", "400")
    assert main(["workers", "list"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "DuplicateWorkerName" in out and "MOSAIC_PREFER_WORKER=twin=" in out


# --- the rule alone ------------------------------------------------------------------------


def contender(dist: str, style: str | None, error: str | None = None) -> Contender:
    return Contender(address("w", dist), dist, f"{dist}.plugin", style, error)


def test_the_rule_in_order() -> None:
    native, upstream = contender("n", "plugin"), contender("u", "upstream")
    broken = contender("b", None, "ImportError: x")
    assert choose("w", [upstream, native]).chosen == "w@n"
    assert choose("w", [upstream, native], preferred="u").chosen == "w@u"
    assert choose("w", [native, broken]).rule == RULE_ONLY_ONE_LOADS
    assert choose("w", [upstream, broken]).chosen == "w@u"  # loading beats style
    assert choose("w", [native, contender("m", "plugin")]).chosen is None
    assert choose("w", [broken, contender("c", None, "E: y")]).chosen is None


def test_addresses_use_pips_normalized_distribution_names() -> None:
    assert canonical_distribution("Mosaic_Worker.CleanRL") == "mosaic-worker-cleanrl"
    assert address("cleanrl", "cleanrl_worker") == "cleanrl@cleanrl-worker"
    assert address("x", None) == "x@unknown"


def test_workers_show_takes_an_address(
    install: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    install("twin-native", NATIVE)
    install("twin-upstream", UPSTREAM)
    monkeypatch.setenv("MOSAIC_DISABLE_WORKERS", "example,cleanrl")
    assert main(["workers", "show", "twin@twin-upstream", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["name"] == "twin@twin-upstream" and info["style"] == "upstream"
    assert info["metadata"]["name"] == "Upstream Twin"
