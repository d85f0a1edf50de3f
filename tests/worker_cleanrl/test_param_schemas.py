"""The JSON Schema of each algorithm's algo_params: read from the script, exposed, enforced."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from mosaic_worker_cleanrl.algo_params import RESERVED_ARGUMENTS
from mosaic_worker_cleanrl.config import CleanRLConfig
from mosaic_worker_cleanrl.registry import algo_params_schema, algo_params_schemas, resolve

from mosaic_sdk.contract import ConfigError
from mosaic_sdk.plugins import discover_workers
from worker_cleanrl.worker_runs import needs_upstream

BAD_VALUES = {"integer": "many", "number": "fast", "string": 3, "boolean": "yes",
              "array": 5}  # fmt: skip


def test_our_ppo_schema_reads_types_defaults_and_docstrings() -> None:
    schema = algo_params_schema(resolve("ppo"))
    props = schema["properties"]
    assert props["learning_rate"] == {
        "title": "learning_rate", "type": "number", "default": 2.5e-4,
        "description": "Adam learning rate", "x-flag": "--learning-rate"}  # fmt: skip
    assert (
        props["target_kl"]["type"] == ["number", "null"] and props["target_kl"]["default"] is None
    )
    assert props["anneal_lr"]["type"] == "boolean" and props["anneal_lr"]["default"] is True
    assert schema["additionalProperties"] is False and schema["x-argument-style"] == "tyro"
    assert not set(props) & set(RESERVED_ARGUMENTS)
    assert schema["x-set-by-worker"]["env_id"] == "env_id"


def test_argparse_defaults_help_and_unreadable_defaults(tmp_path: Path) -> None:
    from mosaic_worker_cleanrl.arguments import read_script_arguments
    from mosaic_worker_cleanrl.param_schema import algo_params_schema as build

    script = tmp_path / "algo.py"
    script.write_text(
        "import argparse, os\n"
        "p = argparse.ArgumentParser()\n"
        "p.add_argument('--exp-name', type=str, default=os.path.basename(__file__))\n"
        "p.add_argument('--buffer-size', type=int, default=int(1e6), help='replay ' 'size')\n"
        "p.add_argument('--learning-starts', type=int, default=5e3)\n"
        "p.add_argument('--verbose', action='store_true')\n"
    )
    props = build("algo", read_script_arguments(script))["properties"]
    assert props["exp_name"]["x-default-source"] == "os.path.basename(__file__)"
    assert "default" not in props["exp_name"]
    assert props["buffer_size"]["default"] == 1_000_000
    assert props["buffer_size"]["description"] == "replay size"
    assert props["learning_starts"]["default"] == 5000 and props["learning_starts"]["type"] == (
        "integer"
    )
    assert props["verbose"] == {"title": "verbose", "type": "boolean", "default": False,
                                "x-flag": "--verbose"}  # fmt: skip


def _schemas() -> dict[str, dict]:
    return algo_params_schemas()


@needs_upstream
def test_every_schema_is_valid_and_agrees_with_the_validation() -> None:
    schemas = _schemas()
    assert {"ppo", "dqn", "c51", "sac_continuous_action", "td3_continuous_action"} <= set(schemas)
    for algo, schema in schemas.items():
        jsonschema.Draft202012Validator.check_schema(schema)
        defaults = {k: p["default"] for k, p in schema["properties"].items() if "default" in p}
        jsonschema.validate(defaults, schema)
        # What the schema allows, the worker takes; what it refuses, the worker refuses.
        CleanRLConfig.from_dict({"run_id": "r", "algo": algo, "algo_params": defaults})
        for name, prop in schema["properties"].items():
            kind = prop["type"] if isinstance(prop["type"], str) else prop["type"][0]
            if kind not in BAD_VALUES:
                continue
            bad = {name: BAD_VALUES[kind]}
            with pytest.raises(jsonschema.ValidationError):
                jsonschema.validate(bad, schema)
            with pytest.raises(ConfigError, match=f"algo_params.{name}: {name} expects"):
                CleanRLConfig.from_dict({"run_id": "r", "algo": algo, "algo_params": bad})


@needs_upstream
def test_c51_schema_comes_from_its_argparse_definition() -> None:
    props = _schemas()["c51"]["properties"]
    assert props["n_atoms"] == {"title": "n_atoms", "type": "integer", "default": 101,
                                "description": "the number of atoms",
                                "x-flag": "--n-atoms"}  # fmt: skip
    assert props["save_model"]["type"] == "boolean" and props["save_model"]["default"] is False
    assert props["wandb_entity"]["type"] == ["string", "null"]


def test_unknown_flag_is_named_with_the_allowed_ones() -> None:
    with pytest.raises(ConfigError) as info:
        CleanRLConfig.from_dict({"run_id": "r", "algo_params": {"learning_rat": 0.1}})
    text = str(info.value)
    assert "ppo has no argument 'learning_rat' (did you mean learning_rate?)" in text
    allowed = text.split("it accepts ")[1].split(" (and, as for every")[0].split(", ")
    assert allowed == sorted(algo_params_schema(resolve("ppo"))["properties"])
    assert text.count("it accepts") == 1


def test_the_hook_answers_for_one_algorithm_or_all() -> None:
    handle = discover_workers().get("cleanrl")
    one = handle.algo_params_schema("ppo")
    assert list(one) == ["ppo"] and "learning_rate" in one["ppo"]["properties"]
    assert handle.algo_params_schema("no_such_algo") == {}
    assert set(handle.algo_params_schema()) == set(_schemas())


def test_workers_show_json_carries_the_schemas() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "mosaic_sdk.cli", "workers", "show", "cleanrl", "--json"],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    info = json.loads(out.stdout)
    assert info["algo_params_schemas"]["ppo"]["properties"]["num_steps"]["default"] == 128
    rows = {r["name"]: r for r in info["details"]["Algorithms"]}
    assert rows["ppo"]["runs"] is True and rows["ppo"]["params"] == len(
        info["algo_params_schemas"]["ppo"]["properties"]
    )


def test_mosaic_run_refuses_a_bad_param_before_any_process_starts(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.json"
    cfg.write_text(json.dumps({"algo": "ppo", "algo_params": {"num_steps": "many"}}))
    runs = tmp_path / "runs"
    out = subprocess.run(
        [sys.executable, "-m", "mosaic_sdk.cli", "run", "cleanrl", "--config", str(cfg),
         "--store", str(tmp_path / "s.sqlite"), "--runs-dir", str(runs), "--no-preflight"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    assert "num_steps expects an int, got str 'many'" in out.stderr
    assert not runs.exists() or not any(runs.iterdir()), "no run directory, no process"
