"""Step and episode lines as the platform's telemetry proxy reads them (issue 22).

``proxy_view`` below is written from the facts of the platform's proxy (its
``_make_runstep``/``_make_runepisode``), independently of the SDK's own reading rule: it
forwards only lines whose ``type`` is ``step`` or ``episode``; the episode index comes from
``metadata_json``, else ``metadata`` (an object, or the JSON text of one), key
``episode_index``; when that is absent from the top-level ``episode``; else 0. A top-level
``episode_index`` is never read. It is applied to real output of the emitter and of the
example worker: before schema version 3 the example's three episodes reached the platform as
[0, 0, 0] and every step as episode 0.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mosaic_sdk.telemetry import TelemetryEmitter, classify_line, validate_line
from mosaic_sdk.telemetry.episode_index import (
    caller_metadata,
    line_metadata,
    platform_episode_index,
)


def proxy_view(raw: str) -> dict[str, Any] | None:
    """What the proxy forwards for one stdout line (None: not forwarded)."""
    try:
        ev = json.loads(raw)
    except json.JSONDecodeError:
        return None
    kind = str(ev.get("type", "")).lower()
    if kind not in ("step", "episode"):
        return None
    index = None
    meta = ev.get("metadata_json", ev.get("metadata", "{}"))
    if isinstance(meta, str):
        try:
            index = json.loads(meta).get("episode_index")
        except (json.JSONDecodeError, TypeError):
            pass
    elif isinstance(meta, dict):
        index = meta.get("episode_index")
    if index is None:
        index = ev.get("episode", 0)
    out: dict[str, Any] = {"kind": kind, "episode_index": int(index)}
    if kind == "step":
        out["step_index"] = int(ev.get("step_index", ev.get("step", 0)))
        out["payload_version"] = int(ev.get("payload_version", 0))
        out["episode_seed"] = int(ev.get("episode_seed", 0))
        out["agent_id"] = str(ev.get("agent_id") or "default-agent")
    else:
        out["total_reward"] = float(ev.get("total_reward", ev.get("reward", 0.0)))
        out["steps"] = int(ev.get("steps", 0))
        out["metadata_json"] = ev.get("metadata_json", ev.get("metadata", {}))
    return out


def forwarded(stdout: str) -> list[dict[str, Any]]:
    return [v for raw in stdout.splitlines() if (v := proxy_view(raw)) is not None]


def assert_indices_reach_the_platform(views: list[dict[str, Any]], episodes: int) -> None:
    """Episode lines numbered 0..n-1, and every step under the index of its episode."""
    assert [v["episode_index"] for v in views if v["kind"] == "episode"] == list(range(episodes))
    current = 0
    for v in views:
        if v["kind"] == "step":
            assert v["episode_index"] == current, v
        else:
            assert v["episode_index"] == current
            current += 1


# --- the proxy-shaped reader itself -------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "index"),
    [
        ({"type": "step", "episode_index": 4}, 0),  # top level: never read
        ({"type": "step", "metadata": {"episode_index": 4}}, 4),
        ({"type": "step", "metadata": '{"episode_index": 4}'}, 4),  # metadata as a string
        ({"type": "step", "metadata_json": '{"episode_index": 4}', "metadata": {}}, 4),
        ({"type": "step", "episode": 6}, 6),  # the fallback
        ({"type": "step", "episode": 6, "metadata": {"episode_index": 4}}, 4),
        ({"type": "step", "episode": 6, "metadata": {"other": 1}}, 6),
        ({"type": "episode", "metadata": "not json", "episode": 2}, 2),
        ({"type": "episode"}, 0),
    ],
)
def test_the_proxy_rule_and_the_sdks_copy_of_it_agree(line: dict, index: int) -> None:
    assert proxy_view(json.dumps(line))["episode_index"] == index
    value, _ = platform_episode_index(line)
    assert int(value) == index


def test_lines_the_proxy_does_not_forward() -> None:
    for raw in ("hello", '{"event": "run_started"}', '{"type": "lifecycle"}', "{broken"):
        assert proxy_view(raw) is None


# --- real output ------------------------------------------------------------------------


def test_emitter_lines_reach_the_platform_under_their_episode_index() -> None:
    buf = io.StringIO()
    em = TelemetryEmitter("r", buf, agent_id="a0", flush_interval=0)
    em.run_started(worker_type="demo")
    for episode in range(3):
        for step in range(4):
            em.step(episode, step, 1.0, terminated=step == 3, metadata={"lr": 0.1})
        em.episode(episode, 4.0, 4, terminated=True, metadata={"won": episode == 2})
    em.run_completed(episodes=3, total_reward=12.0, duration_seconds=0.1)
    views = forwarded(buf.getvalue())
    assert len(views) == 15
    assert_indices_reach_the_platform(views, 3)
    assert {v["agent_id"] for v in views if v["kind"] == "step"} == {"a0"}
    for raw in buf.getvalue().splitlines():
        data = classify_line(raw).data
        assert validate_line(data) == [], raw
        if data["type"] in ("step", "episode"):
            # the SDK's reader (top level) and the platform (metadata) read the same index
            assert data["metadata"]["episode_index"] == data["episode_index"]
    episodes = [json.loads(r) for r in buf.getvalue().splitlines() if '"type":"episode"' in r]
    assert [e["metadata"] for e in episodes][2] == {"episode_index": 2, "won": True}


def test_steps_of_episodes_interleaved_by_threads_keep_their_own_index() -> None:
    """The emitter makes the metadata text once per episode: threads writing steps of
    different episodes at once must still each get their own."""
    import threading

    buf = io.StringIO()
    em = TelemetryEmitter("r", buf, flush_interval=0.005)

    def work(episode: int) -> None:
        for i in range(300):
            em.step(episode, i, 0.0)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    em.close()
    lines = [json.loads(x) for x in buf.getvalue().splitlines()]
    assert len(lines) == 1200
    assert all(x["metadata"] == {"episode_index": x["episode_index"]} for x in lines)
    assert sorted(v["episode_index"] for v in forwarded(buf.getvalue()))[::300] == [0, 1, 2, 3]


def test_example_worker_output_reaches_the_platform_as_episodes_0_1_2(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps({"run_id": "proxy-view", "episodes": 3, "seed": 2, "max_steps_per_episode": 20})
    )
    res = subprocess.run(
        [sys.executable, "-m", "mosaic_worker_example", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**os.environ, "MOSAIC_RUN_DIR": str(tmp_path)},
    )
    assert res.returncode == 0, res.stderr
    views = forwarded(res.stdout)
    assert sum(v["kind"] == "step" for v in views) > 3
    assert_indices_reach_the_platform(views, 3)
    steps_per_index: dict[int, int] = {}
    for v in views:
        if v["kind"] == "step":
            steps_per_index[v["episode_index"]] = steps_per_index.get(v["episode_index"], 0) + 1
    reported = {v["episode_index"]: v["steps"] for v in views if v["kind"] == "episode"}
    assert steps_per_index == reported


def test_schema_2_lines_would_reach_the_platform_as_episode_0() -> None:
    """What the emitter wrote before version 3 (the regression this file guards)."""
    old = [
        json.dumps({"type": "episode", "episode_index": i, "total_reward": 1.0, "steps": 1})
        for i in range(3)
    ]
    assert [proxy_view(raw)["episode_index"] for raw in old] == [0, 0, 0]
    # ...and the SDK's reader still reads them by their top-level index
    assert [classify_line(raw).data["episode_index"] for raw in old] == [0, 1, 2]


# --- the emitter's rule: one place decides ---------------------------------------------


def test_caller_metadata_is_kept_and_a_contradicting_index_is_refused() -> None:
    assert line_metadata(3, {"a": 1}) == {"a": 1, "episode_index": 3}
    assert line_metadata(3, {"episode_index": 3}) == {"episode_index": 3}
    assert caller_metadata({"episode_index": 3, "metadata": {"episode_index": 3}}) == {}
    assert caller_metadata({"episode_index": 3, "metadata": {"episode_index": 1}}) == {
        "episode_index": 1
    }
    em = TelemetryEmitter("r", io.StringIO(), flush_interval=0)
    with pytest.raises(ValueError, match=r"metadata\['episode_index'\] is 1 but the line's"):
        em.step(2, 0, 1.0, metadata={"episode_index": 1})
    with pytest.raises(ValueError, match="drop the key from metadata"):
        em.episode(2, 1.0, 1, metadata={"episode_index": True})


def test_proxy_fields_a_worker_has_are_written_and_bad_ones_refused() -> None:
    buf = io.StringIO()
    em = TelemetryEmitter("r", buf, agent_id="a0", flush_interval=0)
    em.step(
        1,
        0,
        0.5,
        agent_id="a1",
        episode_seed=7,
        payload_version=2,
        frame_ref="frames/1",
        render_payload={"rgb": [[[1, 2, 3]]]},
    )
    em.episode(1, 0.5, 1, agent_id="a1", episode_seed=7)
    step, episode = (json.loads(x) for x in buf.getvalue().splitlines())
    assert (step["agent_id"], step["episode_seed"], step["payload_version"]) == ("a1", 7, 2)
    assert step["frame_ref"] == "frames/1" and step["render_payload"] == {"rgb": [[[1, 2, 3]]]}
    assert episode["agent_id"] == "a1" and episode["episode_seed"] == 7
    view = proxy_view(buf.getvalue().splitlines()[0])
    assert (view["episode_index"], view["payload_version"], view["episode_seed"]) == (1, 2, 7)
    for kwargs, message in [
        ({"episode_seed": -1}, "episode_seed must be between 0 and 2\\*\\*64 - 1"),
        ({"episode_seed": 2**64}, "episode_seed must be between"),
        ({"episode_seed": "7"}, "episode_seed must be an integer, got '7'"),
        ({"payload_version": 2**32}, "payload_version must be between 0 and 2\\*\\*32 - 1"),
        ({"payload_version": 1.5}, "payload_version must be an integer"),
        ({"agent_id": ""}, "agent_id must be a non-empty string"),
    ]:
        with pytest.raises(ValueError, match=message):
            em.step(0, 0, 1.0, **kwargs)
    with pytest.raises(ValueError, match="must be >= 0"):
        em.step(-1, 0, 1.0)
    with pytest.raises(ValueError, match="must be >= 0"):
        em.episode(0, 1.0, -2)


def test_the_reader_takes_the_platforms_index_when_a_line_has_no_episode_index() -> None:
    """The platform's trainer writes ``episode`` as a display value (seed + index) beside
    ``metadata.episode_index``: the SDK now numbers such an episode as the platform does."""
    line = classify_line(
        json.dumps({"type": "episode", "episode": 107, "metadata": {"episode_index": 2}})
    )
    assert line.data["episode_index"] == 2 and line.data["episode"] == 107
    as_text = classify_line(json.dumps({"type": "step", "metadata_json": '{"episode_index": 5}'}))
    assert as_text.data["episode_index"] == 5
    plain = classify_line(json.dumps({"type": "step", "episode": 4, "step": 1}))
    assert plain.data["episode_index"] == 4 and "episode" not in plain.data
    broken = classify_line(json.dumps({"type": "step", "episode": 4, "metadata": "[1]"}))
    assert broken.kind == "step" and broken.data["episode_index"] == 4
