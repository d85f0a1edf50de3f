"""Environments (when the worker exposes one): gymnasium's env checker passes, bare and
wrapped by FastLane."""

from __future__ import annotations

import contextlib
import os
import re
import warnings
from typing import Any

from mosaic_sdk.conformance.checks.gates import claims, fastlane_in_sdk
from mosaic_sdk.conformance.leftovers import remove_shm_segments, shm_segments_of
from mosaic_sdk.conformance.registry import SDK, conformance_check
from mosaic_sdk.conformance.results import CheckFailed, CheckSkipped
from mosaic_sdk.conformance.subject import DEFAULT_SEED, WorkerSubject


def exposes_env(subject: WorkerSubject) -> str | None:
    """Gate: the worker's ``mosaic_worker_make_env`` returns an env (asked once)."""
    if subject.handle is None:
        return None
    return subject.memo("gate:exposes_env", lambda: _probe_env(subject))  # type: ignore[no-any-return]


def _probe_env(subject: WorkerSubject) -> str | None:
    try:
        env = _make_env(subject)
    except CheckSkipped as exc:
        return exc.reason
    except CheckFailed:
        return None  # the check reports it
    if env is None:
        return "the worker exposes no environment (mosaic_worker_make_env returns None)"
    _close(env)
    return None


def _quiet_headless_sdl() -> None:
    """Renderers built on pygame/SDL initialise audio and complain on stderr when the machine
    has no sound server (CI); rgb_array rendering needs neither sound nor a screen."""
    if not os.environ.get("XDG_RUNTIME_DIR"):
        os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")


def _make_env(subject: WorkerSubject) -> Any:
    _quiet_headless_sdl()
    handle = subject.require_handle()
    model = subject.config_model()
    data = {"seed": DEFAULT_SEED, **subject.conformance_config(), "run_id": subject.run_id("env")}
    try:
        config = model.from_dict(data)
    except ValueError as exc:
        raise CheckSkipped(f"the conformance config does not validate ({exc})") from None
    try:
        return handle.make_env(config)
    except Exception as exc:  # noqa: BLE001
        raise CheckFailed(f"mosaic_worker_make_env raised {type(exc).__name__}: {exc}") from None


def _close(env: Any) -> None:
    with contextlib.suppress(Exception):  # closing is best effort here
        env.close()


def _check_env(env: Any) -> list[str]:
    # gymnasium only when an env is checked (pytest start-up)
    from gymnasium.utils.env_checker import check_env

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            check_env(env)
        except Exception as exc:  # noqa: BLE001 - the checker raises many kinds
            raise CheckFailed(f"check_env: {type(exc).__name__}: {exc}") from None
    return sorted({_plain(str(w.message)) for w in caught})


def _plain(message: str) -> str:
    """First line of a warning without terminal colour codes."""
    first = (message.splitlines() or [""])[0]
    return re.sub(r"\x1b\[[0-9;]*m", "", first).removeprefix("WARN: ")[:120]


@conformance_check(
    "env.check_env",
    description="gymnasium.utils.env_checker.check_env passes on the worker's env",
    hint="Fix what check_env reports: spaces must contain what reset/step return, reset "
    "must honour seed=, render must match render_mode",
    gates=(exposes_env,),
    levels=(SDK,),
)
def check_env_bare(subject: WorkerSubject) -> str | None:
    env = _make_env(subject)
    try:
        notes = _check_env(env)
    finally:
        _close(env)
    return f"warnings: {'; '.join(notes)}" if notes else None


@conformance_check(
    "env.check_env_fastlane",
    description="check_env also passes on the env wrapped by FastLane",
    hint="Create the env with render_mode='rgb_array' so the FastLane wrapper can render it; "
    "the wrapper must keep the env's spaces and step/reset results intact",
    gates=(exposes_env, claims("supports_fastlane"), fastlane_in_sdk),
    levels=(SDK,),
)
def check_env_fastlane(subject: WorkerSubject) -> str | None:
    # Optional part: gated on fastlane_in_sdk.
    from mosaic_sdk.plugins.wrapping import maybe_wrap_env

    run_id = subject.run_id("env-fastlane")
    env = _make_env(subject)
    try:
        try:
            wrapped = maybe_wrap_env(env, run_id=run_id, force=True)  # type: ignore[call-arg]
        except Exception as exc:  # noqa: BLE001
            raise CheckFailed(
                f"FastLane cannot wrap the env: {type(exc).__name__}: {exc}"
            ) from None
        try:
            notes = _check_env(wrapped)
        finally:
            _close(wrapped)
    finally:
        _close(env)
        remove_shm_segments(shm_segments_of(run_id))
    return f"warnings: {'; '.join(notes)}" if notes else None
