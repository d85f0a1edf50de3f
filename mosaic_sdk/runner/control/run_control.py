"""Everything of one run's control channel, for the supervisor: relay, socket and keys."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mosaic_sdk.plugins import WorkerHandle
from mosaic_sdk.runner.control.control_keys import KEYS_HELP, KeyReader
from mosaic_sdk.runner.control.control_relay import PROTOCOL, ControlRelay
from mosaic_sdk.runner.control.control_socket import ControlServer, start_server


def claimed_protocol(handle: WorkerHandle) -> int | None:
    """The ``control_protocol`` the worker claims (None when it claims none)."""
    try:
        value = handle.capabilities.control_protocol
    except Exception:  # noqa: BLE001 - describe() failing is reported elsewhere
        return None
    return value if isinstance(value, int) else None


class RunControl:
    """One run's control channel: relay, socket and keys. Made before the worker starts; its
    :meth:`close` removes the socket and gives the terminal back."""

    def __init__(
        self,
        handle: WorkerHandle,
        run_dir: Path,
        *,
        keys: bool = False,
        warn: Callable[[str], None] | None = None,
        cancel: Callable[[str], None] | None = None,
    ) -> None:
        self.warn = warn
        self.protocol = claimed_protocol(handle)
        self.relay = ControlRelay(handle.name, self.protocol, stop_without_protocol=cancel)
        self.run_dir = run_dir
        self.want_keys = keys
        self.server: ControlServer | None = None
        self.keys: KeyReader | None = None

    @property
    def stdin_pipe(self) -> bool:
        """Keep the worker's stdin as a pipe: only for a worker of this protocol."""
        return self.protocol == PROTOCOL

    def attach(self, proc: Any) -> None:
        """The worker started: open the socket (and the keys, for a worker of the protocol)."""
        self.relay.attach(proc.stdin)
        self.server = start_server(self.run_dir, self.relay, self.warn)
        if self.want_keys and self.stdin_pipe and sys.stdin.isatty():
            self.keys = KeyReader(sys.stdin.fileno(), self.relay).start()

    @property
    def keys_help(self) -> str | None:
        return KEYS_HELP if self.keys is not None else None

    @property
    def note(self) -> str | None:
        return self.keys.note if self.keys is not None else None

    def close(self) -> None:
        self.relay.end("the run has ended")
        if self.keys is not None:
            self.keys.close()
            self.keys = None
        if self.server is not None:
            self.server.close()
            self.server = None
