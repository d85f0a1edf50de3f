"""The subprocess probe: a plugin is first loaded in a throwaway process."""

from __future__ import annotations

import contextlib
import importlib.machinery
import importlib.util
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO

from mosaic_sdk import __version__ as SDK_VERSION
from mosaic_sdk.exit_status import exit_status
from mosaic_sdk.home import MosaicHomeError, mosaic_home
from mosaic_sdk.plugins.guard import timeout_message

#: The module run as the probe's child.
CHILD_MODULE = "mosaic_sdk.plugins.probe_child"
CACHE_VARIABLE = "MOSAIC_PLUGIN_CACHE"
#: Entries kept in the cache (the newest).
CACHE_ENTRIES = 500
#: Seconds a child may take to start (import the SDK) before its first entry point.
STARTUP_TIMEOUT = 60.0
#: The most characters of a child's stderr kept in an error's traceback.
STDERR_TAIL = 4000
#: The most probe children at once.
MAX_CHILDREN = 4
#: Seconds every child has been on one entry point before another child joins.
SPAWN_AFTER = 0.5


@dataclass(frozen=True)
class ProbeItem:
    """One entry point to probe. ``group``: ``worker`` (``mosaic.workers``, and
    ``MOSAIC_PLUGINS``) or ``plugin`` (``mosaic.plugins``)."""

    group: str
    name: str
    value: str
    distribution: str | None = None
    dist_version: str | None = None
    #: The distribution's metadata directory, when known (part of the cache key).
    location: str | None = None


@dataclass(frozen=True)
class ProbeFailure:
    """Why an entry point is not loaded in the command's process."""

    error_type: str
    message: str
    traceback: str = ""


def cache_path() -> Path | None:
    """Where the verdicts are remembered: ``MOSAIC_PLUGIN_CACHE``, else under the SDK's home;
    None when neither can be resolved (then every command probes)."""
    given = os.environ.get(CACHE_VARIABLE, "").strip()
    if given:
        return Path(given).expanduser()
    try:
        return mosaic_home() / "cache" / "plugin-probes.json"
    except (MosaicHomeError, RuntimeError):
        return None


def module_fingerprint(value: str) -> list[object] | None:
    """``[file, mtime_ns, size]`` of the module an entry-point value names, found without
    running any of its code (the finders only: no package ``__init__`` is executed); None
    when it cannot be found that way (then the entry point is probed every time)."""
    module = value.partition(":")[0].split("[", 1)[0].strip()
    parts = module.split(".")
    if not module or not all(p.isidentifier() for p in parts):
        return None
    try:
        spec = importlib.util.find_spec(parts[0])
        for part in parts[1:]:
            if spec is None or spec.submodule_search_locations is None:
                return None
            spec = importlib.machinery.PathFinder.find_spec(
                part, list(spec.submodule_search_locations)
            )
    except (ImportError, ValueError, AttributeError):
        return None
    if spec is None or not spec.origin or not os.path.isabs(spec.origin):
        return None
    try:
        st = os.stat(spec.origin)
    except OSError:
        return None
    return [spec.origin, st.st_mtime_ns, st.st_size]


def cache_key(item: ProbeItem) -> str | None:
    fingerprint = module_fingerprint(item.value)
    if fingerprint is None:
        return None
    return json.dumps(
        [asdict(item), fingerprint, sys.executable, sys.version, SDK_VERSION], sort_keys=True
    )


def _read_cache(path: Path | None) -> dict[str, float]:
    if path is None:
        return {}
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))["loaded"]
        return {str(k): float(v) for k, v in entries.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def _write_cache(path: Path | None, entries: Mapping[str, float]) -> None:
    if path is None:
        return
    newest = sorted(entries.items(), key=lambda kv: kv[1])[-CACHE_ENTRIES:]
    # OSError: a cache that cannot be written costs a probe next time, nothing else
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".plugin-probes.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"version": 1, "loaded": dict(newest)}, f)
        os.replace(tmp, path)


def forget(items: Sequence[ProbeItem]) -> None:
    """Drop ``items`` from the cache (one that passed its probe then failed in the command's
    process is probed again next time)."""
    path = cache_path()
    entries = _read_cache(path)
    keys = {cache_key(item) for item in items}
    if keys & set(entries):
        _write_cache(path, {k: v for k, v in entries.items() if k not in keys})


def probe(items: Sequence[ProbeItem], timeout: float) -> dict[int, ProbeFailure | None]:
    """Verdicts by index into ``items``: None for one that loaded (in the cache, or in a
    child now), a :class:`ProbeFailure` for one that did not. An index missing from the
    answer could not be probed (the child itself did not start): load it under the guard."""
    path = cache_path()
    cached = _read_cache(path)
    keys = [cache_key(item) for item in items]
    verdicts: dict[int, ProbeFailure | None] = {i: None for i, k in enumerate(keys) if k in cached}
    todo = [i for i in range(len(items)) if i not in verdicts]
    if not todo:
        return verdicts
    found = _probe_in_children([items[i] for i in todo], timeout)
    verdicts.update((todo[j], verdict) for j, verdict in found.items())
    now = time.time()
    fresh = {k: now for j, v in found.items() if v is None and (k := keys[todo[j]]) is not None}
    if fresh:
        _write_cache(path, {**cached, **fresh})
    return verdicts


class _Child:
    """One probe child: its process, the entry point it is on and until when it may be."""

    def __init__(self, stderr: IO[bytes]) -> None:
        self.err = stderr
        self.proc = subprocess.Popen(
            [sys.executable, "-m", CHILD_MODULE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            start_new_session=True,  # its own process group: a hung one is killed whole
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin = self.proc.stdin
        self.fd = self.proc.stdout.fileno()
        self.pending = b""
        #: The entry point sent to it and not answered yet, and whether it began on it.
        self.current: int | None = None
        self.begun = False
        self.since = time.monotonic()
        self.deadline = self.since + STARTUP_TIMEOUT
        self.send({"sys_path": list(sys.path), "argv": list(sys.argv)})

    def send(self, message: object) -> None:
        # OSError: it has ended; its stdout says so (end of file) and it is judged there
        with contextlib.suppress(OSError):
            self.stdin.write(json.dumps(message).encode("utf-8") + b"\n")
            self.stdin.flush()

    def give(self, index: int, item: ProbeItem, timeout: float) -> None:
        self.current, self.begun, self.since = index, False, time.monotonic()
        self.deadline = max(self.deadline, self.since + timeout)
        self.send({"index": index, "item": asdict(item)})

    def end(self) -> None:
        """End the child we started, and what it started (its own process group)."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        for stream in (self.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                stream.close()  # type: ignore[union-attr]


def _probe_in_children(
    items: Sequence[ProbeItem], timeout: float
) -> dict[int, ProbeFailure | None]:
    """Probe ``items`` with a few children, each on one entry point at a time: one child in
    the usual case; another joins while every child has been on its entry point for longer
    than :data:`SPAWN_AFTER` (a slow or hung one), and one replaces a child that ended."""
    verdicts: dict[int, ProbeFailure | None] = {}
    queue = list(range(len(items)))
    children: list[_Child] = []
    with tempfile.TemporaryFile() as err:
        try:
            while queue or children:
                now = time.monotonic()
                idle = [c for c in children if c.current is None]
                for child in idle:
                    if queue:
                        index = queue.pop(0)
                        child.give(index, items[index], timeout)
                    else:
                        children.remove(child)
                        child.stdin.close()  # it has answered all it got: it exits
                        child.end()
                busy = [c for c in children if c.current is not None]
                if (
                    queue
                    and len(children) < MAX_CHILDREN
                    and all(now - c.since > SPAWN_AFTER for c in busy)
                ):
                    try:
                        children.append(_Child(err))
                    except (OSError, TypeError, ValueError):  # no usable sys.executable
                        if not children:
                            break  # no child can start: the rest load under the guard only
                    continue
                if not children:
                    break
                wake = min(c.deadline for c in children)
                if queue and busy and len(children) < MAX_CHILDREN:
                    wake = min(wake, min(c.since for c in busy) + SPAWN_AFTER)
                ready = select.select([c.fd for c in children], [], [], max(wake - now, 0))[0]
                for child in list(children):
                    if child.fd in ready:
                        _read(child, verdicts, timeout)
                    elif time.monotonic() >= child.deadline:
                        _timed_out(child, verdicts, timeout)
                    if child.proc.returncode is not None:
                        children.remove(child)
                        if child.current is not None:
                            # it ended (or hung) before it began on its entry point: the
                            # child itself cannot work here; what is left loads under the
                            # guard only
                            queue.clear()
        finally:
            for child in children:
                child.end()
    return verdicts


def _read(child: _Child, verdicts: dict[int, ProbeFailure | None], timeout: float) -> None:
    chunk = os.read(child.fd, 65536)
    if not chunk:
        status = child.proc.wait()
        if child.current is not None and child.begun:
            verdicts[child.current] = ProbeFailure(
                "PluginEndedProcess",
                f"it ended the process that loaded it ({exit_status(status)}) while loading: "
                "os._exit(), a crash or a signal; it is skipped",
                _tail(child.err),
            )
            child.current = None
        child.end()
        return
    child.pending += chunk
    *lines, child.pending = child.pending.split(b"\n")
    for line in lines:
        try:
            message = json.loads(line)
            index = int(message.get("begin", message.get("end")))
        except (ValueError, TypeError, AttributeError):
            continue  # not the child's own line
        if index != child.current:
            continue
        if "begin" in message:
            child.begun = True
            child.deadline = time.monotonic() + timeout
            continue
        verdicts[index] = None
        if not message.get("ok"):
            verdicts[index] = ProbeFailure(
                str(message.get("error_type", "Exception")),
                str(message.get("message", "")),
                str(message.get("traceback", "")),
            )
        child.current = None
        child.deadline = time.monotonic() + STARTUP_TIMEOUT


def _timed_out(child: _Child, verdicts: dict[int, ProbeFailure | None], timeout: float) -> None:
    child.end()
    if child.current is not None and child.begun:
        message = timeout_message(timeout)
        verdicts[child.current] = ProbeFailure("PluginTimeout", message, _tail(child.err))
        child.current = None


def _tail(err: object) -> str:
    try:
        err.seek(0, os.SEEK_END)  # type: ignore[attr-defined]
        size = err.tell()  # type: ignore[attr-defined]
        err.seek(max(0, size - STDERR_TAIL))  # type: ignore[attr-defined]
        text = err.read().decode("utf-8", "replace")  # type: ignore[attr-defined]
    except (OSError, ValueError):
        return ""
    return f"the probe's output:\n{text}" if text.strip() else ""
