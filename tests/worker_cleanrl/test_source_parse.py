"""The worker parses CleanRL's scripts one at a time (CPython 3.11's ast is not thread-safe)."""

from __future__ import annotations

import ast
import threading
import time
from pathlib import Path

import pytest
from mosaic_worker_cleanrl.arguments import read_script_arguments
from mosaic_worker_cleanrl.availability import module_imports

SCRIPT = """
import argparse
import gymnasium as gym

def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1, help="seed")
    return parser.parse_args()
"""


def test_parses_from_many_threads_never_overlap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "algo.py"
    script.write_text(SCRIPT)
    real_parse = ast.parse
    inside, most = 0, 0
    lock = threading.Lock()

    def slow_parse(*args, **kwargs):  # type: ignore[no-untyped-def]
        nonlocal inside, most
        with lock:
            inside += 1
            most = max(most, inside)
        time.sleep(0.05)  # long enough for the other threads to arrive
        try:
            return real_parse(*args, **kwargs)
        finally:
            with lock:
                inside -= 1

    monkeypatch.setattr(ast, "parse", slow_parse)
    results: list[object] = []
    errors: list[BaseException] = []

    def read(i: int) -> None:
        try:
            if i % 2:
                results.append(module_imports(script))
            else:
                results.append(read_script_arguments(script))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=read, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert len(results) == 6
    assert {"argparse", "gymnasium"} <= next(r for r in results if isinstance(r, set))
    assert most == 1, f"{most} parses ran at once"
