"""``analytics.json``: one model, writer, reader and generated schema, used by every worker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from mosaic_sdk.analytics import (
    ANALYTICS_SCHEMA,
    AgentReturns,
    AnalyticsError,
    AnalyticsManifest,
    Checkpoint,
    analytics_json_schema,
    read_analytics,
    render_schema,
    write_analytics,
)
from mosaic_sdk.scaffold import bake

REPO = Path(__file__).resolve().parents[1]


def sample(**more: object) -> AnalyticsManifest:
    return AnalyticsManifest.build(
        run_id="r-1",
        worker_type="w",
        status="completed",
        returns=[1.0, 3.0, 2.0],
        steps=12,
        duration_seconds=0.5,
        **more,  # type: ignore[arg-type]
    )


def test_schema_file_is_up_to_date() -> None:
    path = REPO / "schema" / "analytics.schema.json"
    assert path.read_text(encoding="utf-8") == render_schema(), (
        "schema/analytics.schema.json is stale: run "
        "`python -m mosaic_sdk.analytics > schema/analytics.schema.json`"
    )


def test_build_summarises_and_round_trips(tmp_path: Path) -> None:
    manifest = sample(checkpoints=[{"path": "ckpt.pt", "step": 8}], extra={"k": [1, 2]})
    assert (manifest.mean_return, manifest.best_return, manifest.last_return) == (2.0, 3.0, 2.0)
    assert manifest.episodes == 3 and manifest.checkpoints == [Checkpoint("ckpt.pt", 8)]
    path = write_analytics(tmp_path / "new", manifest)
    assert path == tmp_path / "new" / "analytics.json"
    assert read_analytics(tmp_path / "new") == manifest
    assert [p.name for p in (tmp_path / "new").iterdir()] == ["analytics.json"]  # no temp left
    data = json.loads(path.read_text())
    assert data["schema"] == ANALYTICS_SCHEMA and data["extra"] == {"k": [1, 2]}


def test_written_files_satisfy_the_generated_schema(tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(analytics_json_schema())
    validator.validate(json.loads(write_analytics(tmp_path, sample()).read_text()))
    empty = AnalyticsManifest.build(
        run_id="r", worker_type="w", status="cancelled", returns=[], steps=0, duration_seconds=0
    )
    validator.validate(json.loads(write_analytics(tmp_path, empty).read_text()))
    assert empty.mean_return is None
    nan = AnalyticsManifest.build(
        run_id="r", worker_type="w", status="failed", returns=[float("nan"), 2.0], steps=1,
        duration_seconds=0,
    )  # fmt: skip
    assert nan.returns == [None, 2.0] and nan.mean_return == 2.0
    validator.validate(json.loads(write_analytics(tmp_path, nan).read_text()))
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({**empty.to_dict(), "schema": "mosaic.example.analytics/1"})


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "does not exist: the worker writes it when the run ends"),
        ("{not json", "is not JSON (line 1, column 2"),
        ("[1, 2]", "expected a JSON object, got list"),
        (
            json.dumps({"schema": "mosaic.example.analytics/1", "run_id": "r"}),
            "schema is 'mosaic.example.analytics/1', this SDK reads 'mosaic.analytics/1'",
        ),
        (
            json.dumps({"schema": ANALYTICS_SCHEMA, "run_id": "r", "worker_type": "w"}),
            "status: missing; episodes: missing",
        ),
    ],
)
def test_reader_errors_say_what_is_wrong(tmp_path: Path, content: str | None, message: str) -> None:
    if content is not None:
        (tmp_path / "analytics.json").write_text(content, encoding="utf-8")
    with pytest.raises(AnalyticsError) as info:
        read_analytics(tmp_path)
    assert message in str(info.value) and str(tmp_path) in str(info.value)


def test_reader_names_each_bad_field(tmp_path: Path) -> None:
    data = sample().to_dict()
    data.update(status="done", steps="12", surprise=1, returns=[1.0, "x"])
    data["checkpoints"] = [{"step": 3}]
    (tmp_path / "analytics.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(AnalyticsError) as info:
        read_analytics(tmp_path)
    text = str(info.value)
    for part in (
        "surprise: unknown field",
        "status: 'done' is not one of",
        "steps: expected int, got '12'",
        "returns[1]: 'x' is not float or null",
        "checkpoints[0].path: missing",
    ):
        assert part in text, text


def test_importing_it_stays_light() -> None:
    code = (
        "import sys, mosaic_sdk.analytics; "
        "print(sorted(m for m in ('pydantic', 'pluggy', 'numpy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- every worker writes it -----------------------------------------------------------------


def run_worker(module: str, tmp_path: Path, extra_path: Path | None = None) -> Path:
    run_id = f"an-{uuid.uuid4().hex[:8]}"
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"run_id": run_id, "episodes": 2, "max_steps_per_episode": 15}))
    env = {k: v for k, v in os.environ.items() if "FASTLANE" not in k}
    env.update(MOSAIC_RUN_DIR=str(tmp_path), MOSAIC_RUN_ID=run_id)
    if extra_path is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(extra_path), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-m", module, "--config", str(config)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return tmp_path


def test_the_example_writes_the_sdk_manifest(tmp_path: Path) -> None:
    manifest = read_analytics(run_worker("mosaic_worker_example", tmp_path))
    assert manifest.worker_type == "example" and manifest.status == "completed"
    assert manifest.episodes == 2 and len(manifest.returns) == 2 and manifest.algo == "balance"


def test_a_baked_worker_writes_the_sdk_manifest(tmp_path: Path) -> None:
    config = tmp_path / "cookiecutter-config.yaml"
    config.write_text(f'replay_dir: "{tmp_path / "replay"}"\n', encoding="utf-8")
    project = bake(tmp_path / "out", {}, config_file=config).project_dir
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    manifest = read_analytics(run_worker("mosaic_worker_my_agent", run_dir, project))
    assert manifest.worker_type == "my_agent" and manifest.episodes == 2
    assert len(manifest.extra["action_preferences"]) == 2  # CartPole's two actions


def test_a_multi_agent_run_summarises_each_agent_apart(tmp_path: Path) -> None:
    # a zero-sum game: the blended summary reads 0, each player's does not
    manifest = AnalyticsManifest.build(
        run_id="r-2",
        worker_type="w",
        status="completed",
        returns=[0.0, 0.0, 0.0],
        steps=12,
        duration_seconds=0.5,
        agent_returns={"p1": [1.0, 1.0, -1.0], "p2": [-1.0, -1.0, 1.0]},
        extra={"agents": {"p1": {"episodes": 3}}},
    )
    assert manifest.mean_return == 0.0
    assert manifest.extra["agents"] == {"p1": {"episodes": 3}}  # the worker's own, kept
    summaries = manifest.agent_summaries()
    assert summaries["p1"] == AgentReturns(3, pytest.approx(1 / 3), 1.0, -1.0)
    assert summaries["p2"] == AgentReturns(3, pytest.approx(-1 / 3), 1.0, 1.0)
    write_analytics(tmp_path, manifest)
    assert read_analytics(tmp_path).agent_summaries() == summaries
    # a single-agent manifest is as before: no per-agent summaries
    assert "agent_returns" not in sample().extra and sample().agent_summaries() == {}
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(analytics_json_schema())
    data = json.loads((tmp_path / "analytics.json").read_text())
    validator.validate(data)
    # the summaries live under extra: the first reader's model (an open extra object) takes
    # the file; a broken summary is refused by this one, with the field named
    assert set(data) == {f for f in AnalyticsManifest.__dataclass_fields__}
    data["extra"]["agent_returns"]["p2"]["episodes"] = "three"
    (tmp_path / "analytics.json").write_text(json.dumps(data))
    with pytest.raises(AnalyticsError, match=r"extra\.agent_returns\.p2\.episodes: expected int"):
        read_analytics(tmp_path)
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(data)
