"""``WorkerHandle``: one discovered worker, and the calls of its hooks."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, TypedDict

import pluggy

from mosaic_sdk.contract import LaunchCommand, WorkerCapabilities, WorkerConfig, WorkerMetadata
from mosaic_sdk.plugins.choice import ChoiceDict
from mosaic_sdk.plugins.errors import LoadErrorDict
from mosaic_sdk.plugins.upstream import sdk_pair


class _EntryFields(TypedDict):
    name: str
    ok: bool
    version: str | None
    distribution: str | None


class WorkerEntry(_EntryFields, total=False):
    """One row of :meth:`~mosaic_sdk.plugins.discovery.WorkerRegistry.entries` (``mosaic
    workers list --json``): :meth:`WorkerHandle.summary` for a worker that loads, ``error``
    for one that does not; ``choice`` on a shared name's row, ``alternative_of`` on the rows
    of the contenders it does not mean."""

    entry_point: str
    style: str
    display_name: str
    description: str
    error: LoadErrorDict
    choice: ChoiceDict
    alternative_of: str


class WorkerHandle:
    """One discovered worker: calls its hooks (with the SDK's and other non-worker plugins)."""

    def __init__(
        self,
        name: str,
        plugin: object,
        pm: pluggy.PluginManager,
        *,
        distribution: str | None,
        dist_version: str | None,
        entry_point: str,
        style: str,
    ) -> None:
        self.name = name
        self.plugin = plugin
        self.pm = pm
        self.distribution = distribution
        self.dist_version = dist_version
        self.entry_point = entry_point
        self.style = style  # "plugin" or "upstream"
        self._callers: dict[str, pluggy.HookCaller] = {}
        self._description: tuple[WorkerMetadata, WorkerCapabilities] | None = None

    def _hook(self, hook_name: str) -> pluggy.HookCaller:
        caller = self._callers.get(hook_name)
        if caller is None:
            others = [
                p
                for n, p in self.pm.list_name_plugin()
                if n.startswith("worker:") and p is not self.plugin
            ]
            caller = self.pm.subset_hook_caller(hook_name, remove_plugins=others)
            self._callers[hook_name] = caller
        return caller

    def describe(self) -> tuple[WorkerMetadata, WorkerCapabilities]:
        """Metadata and capabilities, validated (cached after the first call)."""
        if self._description is None:
            result = self._hook("mosaic_worker_describe")()
            if result is None:
                raise TypeError("the plugin implements no mosaic_worker_describe hook")
            self._description = sdk_pair(*result)
        return self._description

    @property
    def metadata(self) -> WorkerMetadata:
        return self.describe()[0]

    @property
    def capabilities(self) -> WorkerCapabilities:
        return self.describe()[1]

    def config_model(self) -> type[WorkerConfig]:
        model = self._hook("mosaic_worker_config_model")()
        if not (inspect.isclass(model) and issubclass(model, WorkerConfig)):
            raise TypeError(
                f"worker {self.name!r}: mosaic_worker_config_model returned {model!r}, "
                "not a WorkerConfig subclass"
            )
        return model

    def launch_command(
        self, config_path: Path, config: WorkerConfig, run_dir: Path
    ) -> LaunchCommand:
        cmd = self._hook("mosaic_worker_launch_command")(
            config_path=config_path, config=config, run_dir=run_dir
        )
        if cmd is None:
            raise TypeError(f"worker {self.name!r} implements no mosaic_worker_launch_command")
        if not isinstance(cmd, LaunchCommand):
            cmd = LaunchCommand.model_validate(cmd)
        return cmd

    def conformance_config(self) -> dict[str, object] | None:
        result = self._hook("mosaic_worker_conformance_config")()
        return None if result is None else dict(result)

    def make_env(self, config: WorkerConfig) -> Any:
        return self._hook("mosaic_worker_make_env")(config=config)

    def algo_params_schema(self, algo: str | None = None) -> dict[str, dict[str, object]]:
        """``{algorithm: JSON Schema of its parameters}`` (every one when ``algo`` is None);
        empty when the worker does not implement ``mosaic_worker_algo_params_schema``."""
        result = self._hook("mosaic_worker_algo_params_schema")(algo=algo)
        return {} if result is None else dict(result)

    def details(self) -> dict[str, object]:
        result = self._hook("mosaic_worker_details")()
        return {} if result is None else dict(result)

    def protocol_version(self) -> int:
        return int(self._hook("mosaic_worker_protocol_version")())

    def summary(self) -> WorkerEntry:
        meta, caps = self.describe()
        return {
            "name": self.name,
            "ok": True,
            "version": meta.version,
            "distribution": self.distribution,
            "entry_point": self.entry_point,
            "style": self.style,
            "display_name": meta.name,
            "description": meta.description,
        }
