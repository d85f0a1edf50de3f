"""Hook specifications of the ``mosaic`` plugin project."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pluggy

from mosaic_sdk.json_types import JsonObject

if TYPE_CHECKING:  # pragma: no cover
    from mosaic_sdk.contract import LaunchCommand, WorkerCapabilities, WorkerConfig, WorkerMetadata

PROJECT_NAME = "mosaic"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)

#: Version of the worker protocol this SDK speaks (telemetry schema, launch contract).
PROTOCOL_VERSION = 1


@hookspec(firstresult=True)
def mosaic_worker_describe() -> tuple[WorkerMetadata, WorkerCapabilities] | None:
    """Describe the worker: its metadata and capabilities.

    Called by discovery (``mosaic workers list/show``), the runner and the conformance suite,
    each time they need the description; keep it cheap and free of side effects (no heavy
    imports, no environment creation).

    Returns a ``(WorkerMetadata, WorkerCapabilities)`` pair. ``capabilities.worker_type`` must
    equal the entry-point name. Required of every worker.
    """


@hookspec(firstresult=True)
def mosaic_worker_config_model() -> type[WorkerConfig] | None:
    """Return the worker's configuration model: a subclass of ``WorkerConfig``.

    Called by the runner before a launch (to validate the user's config and to write it with
    its ``run_id``), by ``mosaic workers show`` (to print its JSON Schema) and by the
    conformance suite. When no plugin answers, the plain ``WorkerConfig`` is used.
    """


@hookspec(firstresult=True)
def mosaic_worker_launch_command(
    config_path: Path, config: WorkerConfig, run_dir: Path
) -> LaunchCommand | None:
    """Return how to start the worker as a child process for one run.

    Called by the runner (``mosaic run``) and the conformance suite once per launch, after the
    validated config has been written to ``config_path`` inside ``run_dir``.

    Returns a ``LaunchCommand(argv=[...], env={...})``: ``argv[0]`` is usually
    ``sys.executable``; ``env`` holds only the variables to add to the runner's environment.
    The child must write telemetry as JSONL on its stdout. Wrap this hook (``wrapper=True``) to
    add variables or a profiler to every launch.
    """


@hookspec(firstresult=True)
def mosaic_worker_conformance_config() -> Mapping[str, object] | None:
    """Return a small config (without ``run_id``) for the conformance suite to run with.

    Called by the conformance suite before its run-time checks. The run should last about
    one second (long enough to observe streaming, heartbeats and a SIGTERM mid-run, short
    enough for a quick suite), emit at least one step and one episode, and be deterministic
    for its seed. When no plugin answers, the config model's defaults are used.
    """


@hookspec(firstresult=True)
def mosaic_worker_make_env(config: WorkerConfig) -> Any | None:
    """Build one instance of the environment the worker trains on, if it exposes one.

    Called by the conformance suite (to run ``gymnasium.utils.env_checker.check_env`` on it,
    bare and wrapped by FastLane) and by tools that want to preview the env. Returns a
    ``gymnasium.Env`` (the caller closes it) or ``None`` when the worker exposes no env.
    """


@hookspec(firstresult=True)
def mosaic_fastlane_wrap_env(env: Any, run_id: str, settings: dict[str, Any]) -> Any | None:
    """Wrap a gymnasium env (or vector env, or PettingZoo AEC env) so that it publishes
    FastLane frames.

    Called by worker code (``mosaic_sdk.plugins.maybe_wrap_env``, through the process's
    ``mosaic_sdk.plugins.fastlane_provider.fastlane_plugin_manager()``, and the CleanRL shim's
    ``gymnasium.make`` patch) for every env it creates while FastLane is switched on.
    ``settings`` holds the resolved FastLane options (``video_mode``, ``slot``,
    ``grid_limit``, ``interval_ms``, ``max_dim``). One provider answers (the SDK ships the
    default one); implementations marked ``wrapper=True`` may decorate its result.

    Returns the wrapped env, or ``None`` to leave the decision to the next provider.
    """


@hookspec
def mosaic_telemetry_event(run_id: str, worker: str, event: JsonObject) -> None:
    """Observe one lifecycle event of a run (``run_started``, ``heartbeat``, ``run_completed``...).

    Called by the runner for every lifecycle line it receives from a worker, in order, after
    storing it, and for the events the runner synthesises itself (a ``run_failed`` for a
    worker that died silently, ``run_cancelled`` on Ctrl-C). Every plugin sees every event
    (1:N), e.g. to forward it to another service. ``event`` is the parsed line; do not mutate
    it. Exceptions are reported by the runner and do not stop the run.

    Returns nothing (return values are ignored).
    """


@hookspec
def mosaic_telemetry_steps(run_id: str, steps: Sequence[Any]) -> None:
    """Observe the step rows of a run as they are stored, one batch at a time.

    Called by the runner (``mosaic run``) after each batch of rows it commits to the store,
    on a thread of this plugin's own (never the thread that reads the worker), with the run's
    id and the batch's steps: a read-only sequence (``RowBatch``; ``list(steps)`` for a list)
    of :class:`mosaic_sdk.runner.recording.observers.StepRow` named tuples (the columns of the
    ``steps`` table: ``line_no``, ``episode_index``, ``step_index``, ``reward``, ..., ``raw`` (the
    line as written), ``agent_id``), in stored order, each made when it is read. Batches
    that waited are coalesced into one call. Every plugin that implements it gets every step
    (1:N), e.g. to forward a run to another service while it happens.

    A slow implementation never slows the run: past ``MAX_PENDING_ROWS`` waiting rows its
    oldest waiting batches are dropped for it alone, counted and reported (a warning, and
    ``mosaic runs show``); the store keeps every row. An implementation that raises is
    reported once by plugin name and gets nothing more of that run. Plugins that only observe
    can be installed through the ``mosaic.plugins`` entry-point group.

    Returns nothing (return values are ignored).
    """


@hookspec
def mosaic_telemetry_episodes(run_id: str, episodes: Sequence[Any]) -> None:
    """Observe the episode rows of a run as they are stored, one batch at a time.

    Called by the runner exactly as :func:`mosaic_telemetry_steps` is (same thread, same
    batches, just after the steps of the same batch), with the batch's episodes as a sequence
    of :class:`mosaic_sdk.runner.recording.observers.EpisodeRow` named tuples (``line_no``,
    ``episode_index``, ``total_reward``, ``steps``, ..., ``raw``, ``agent_id``,
    ``unfinished``: 1 for an episode the run's end cut off). Every plugin
    that implements it gets every episode (1:N); slow or failing implementations are handled
    as for steps (dropped and counted for that plugin alone, or disabled for the run).

    Returns nothing (return values are ignored).
    """


@hookspec
def mosaic_telemetry_series(run_id: str, points: Sequence[Any]) -> None:
    """Observe the series points of a run as they are stored, one batch at a time.

    Called by the runner exactly as :func:`mosaic_telemetry_steps` is (same thread, same
    batches, after the episodes of the same batch), with the batch's points: a list of
    :class:`mosaic_sdk.runner.storage.records.SeriesPoint` named tuples (``run_id``, ``name``,
    ``agent_id``, ``step``, ``value``, ``wall_ns``), in stored order. A point is one value of
    a ``metrics`` event or one numeric field of a worker's own lifecycle event (see
    ``docs/guides/metrics.md``); ``value`` may be NaN or infinite. Slow or failing
    implementations are handled as for steps. The SDK's TensorBoard writer
    (``mosaic run --tensorboard DIR``) is one.

    Returns nothing (return values are ignored).
    """


@hookspec
def mosaic_run_cleanup(run_id: str, worker: str, run_dir: Path, exit_code: int | None) -> None:
    """Release what a run may have left behind once its worker process has exited.

    Called by the runner (and the conformance suite) exactly once per launch, after the child
    has exited for any reason, SIGKILL included. The SDK's FastLane plugin removes the run's
    segment here when its writer is gone. Implementations must be idempotent and must only
    remove resources that belong to ``run_id``.

    Returns nothing (return values are ignored).
    """


@hookspec(firstresult=True)
def mosaic_worker_protocol_version() -> int | None:
    """Return the worker-protocol version the worker speaks.

    Called by the runner and the conformance suite to refuse a worker written for a protocol
    this SDK does not speak. Workers built on this SDK need not implement it: the SDK answers
    with :data:`PROTOCOL_VERSION`.
    """


@hookspec(firstresult=True)
def mosaic_worker_algo_params_schema(
    algo: str | None,
) -> Mapping[str, Mapping[str, object]] | None:
    """Return the JSON Schema of the algorithm-specific parameters of the worker's algorithms.

    Called by ``mosaic workers show NAME --json`` (with ``algo=None``) and by a GUI that builds
    a training form for one algorithm (``algo="dqn"``), before any run. Returns a mapping of
    algorithm name to a JSON Schema object (``properties`` with ``type``, ``default`` and
    ``description``), every algorithm when ``algo`` is ``None``, only that one otherwise (an
    empty mapping for a name the worker does not know). The worker's config validation must
    accept exactly what the schema allows. Workers without per-algorithm parameters need not
    implement it.
    """


@hookspec(firstresult=True)
def mosaic_worker_details() -> Mapping[str, object] | None:
    """Return extra sections for ``mosaic workers show``.

    Called by ``mosaic workers show NAME`` (and its ``--json`` form) after the standard
    description. Returns a mapping of section title to either a string or a list of flat dicts
    (shown as a table), e.g. ``{"Algorithms": [{"name": "ppo", "importable": True}, ...]}``.
    Keep it cheap: it may probe imports but should not start training or create envs.
    """
