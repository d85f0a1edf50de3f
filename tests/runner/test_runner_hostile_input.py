"""Hostile input to the runner's readers: deep nesting in lines and configs, bad options."""

from __future__ import annotations

from pathlib import Path

import pytest

from mosaic_sdk.cli import main
from mosaic_sdk.contract import ConfigError
from mosaic_sdk.runner.recording.ingest import LineBatch, LineIngest
from mosaic_sdk.runner.supervision.config_input import apply_overrides, read_config_file
from mosaic_sdk.telemetry.reader import MAX_JSON_DEPTH


@pytest.mark.parametrize(
    "raw",
    [
        b"[" * 1000,
        b'{"a":' * 1000,
        b'{"type":"step","episode_index":0,"step_index":0,"x":' + b"[" * 5000 + b"]" * 5000 + b"}",
        b'{"a":' + b"[" * 100_000,
    ],
)
def test_ingest_keeps_deeply_nested_lines_as_invalid(raw: bytes) -> None:
    ingest = LineIngest("r")
    batch = LineBatch()
    ingest.add(batch, [raw, b'{"type":"step","episode_index":0,"step_index":1}'])
    [row] = batch.logs
    assert row[3] == "invalid" and "nested deeper than" in row[5]
    assert row[6] == raw.decode()
    assert len(batch.steps) == 1  # the next line is read as usual


def _deep_config(depth: int) -> str:
    return '{"a": ' + "[" * depth + "]" * depth + "}"


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH, 1000, 100_000])
def test_deep_config_files_get_one_clear_error(tmp_path: Path, depth: int) -> None:
    path = tmp_path / "deep.json"
    path.write_text(_deep_config(depth))
    with pytest.raises(ConfigError, match=f"nested deeper than {MAX_JSON_DEPTH} levels"):
        read_config_file(path)


def test_a_config_just_within_the_depth_limit_is_read(tmp_path: Path) -> None:
    path = tmp_path / "ok.json"
    path.write_text(_deep_config(MAX_JSON_DEPTH - 1))
    assert "a" in read_config_file(path)


@pytest.mark.parametrize("depth", [1000, 100_000])
def test_deep_override_gets_one_clear_error(depth: int) -> None:
    with pytest.raises(ConfigError, match="nested deeper than"):
        apply_overrides({}, ["x=" + "[" * depth + "]" * depth])


def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def test_mosaic_run_with_a_100k_deep_config_exits_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000)
    code = main(["run", "example", "--config", str(path), "--store", str(tmp_path / "s")])
    _, err = capsys.readouterr()
    assert code == 2
    line = _one_error_line(err)
    assert line.startswith("mosaic: error: ") and "nested deeper than" in line


@pytest.mark.parametrize("grace", ["nan", "inf", "-1", "-inf", "NaN", "1e999"])
def test_mosaic_run_refuses_a_grace_that_never_ends(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, grace: str
) -> None:
    code = main(["run", "example", f"--grace={grace}", "--store", str(tmp_path / "s.sqlite")])
    _, err = capsys.readouterr()
    assert code == 2
    line = _one_error_line(err)
    assert line.startswith("mosaic: error: --grace ")
    assert "is not a finite number of seconds >= 0" in line
    assert not (tmp_path / "s.sqlite").exists()  # nothing was started


def test_library_refuses_a_non_finite_grace(tmp_path: Path) -> None:
    from mosaic_sdk.runner import run_worker

    with pytest.raises(ValueError, match="grace"):
        run_worker("example", {}, store=tmp_path / "s.sqlite", grace=float("nan"))


@pytest.mark.parametrize("argv", [["run", "example"], ["runs", "list"]])
def test_mosaic_home_of_an_unknown_user_is_one_error_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    monkeypatch.setenv("MOSAIC_HOME", "~no_such_user_mosaic_test/mosaic")
    code = main(argv)
    _, err = capsys.readouterr()
    assert code == 2
    line = _one_error_line(err)
    assert "MOSAIC_HOME" in line and "~no_such_user_mosaic_test" in line


def test_mosaic_home_error_from_the_library(monkeypatch: pytest.MonkeyPatch) -> None:
    from mosaic_sdk.runner.storage.paths import MosaicHomeError, mosaic_home

    monkeypatch.setenv("MOSAIC_HOME", "~no_such_user_mosaic_test")
    with pytest.raises(MosaicHomeError, match="set MOSAIC_HOME to a directory"):
        mosaic_home()
