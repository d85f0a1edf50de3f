"""Small engines run in child processes by the transport tests."""

from __future__ import annotations

import time
from multiprocessing.connection import Connection

from mosaic_sdk.shm import commands as cmd
from mosaic_sdk.shm.transport import SharedMemoryTransport


def echo_engine(name: str, report: Connection, num_envs: int = 4, obs_size: int = 3) -> None:
    """Each step: obs[:, 0] = the action batch number, obs[:, 1] = actions[:, 0].

    Checks that batches arrive as 1, 2, 3, ... and that actions[0, 0] is the client's
    counter; reports ("done", batches, errors) on close.
    """
    t = SharedMemoryTransport(num_envs, obs_size, 2, name=name, cmd_ring_size=4096)
    report.send(("ready", t.name))
    errors = 0
    batches = 0
    try:
        while (seq := t.wait_for_actions()) is not None:
            batches += 1
            if seq != batches or t.actions[0, 0] != float(seq):
                errors += 1
            t.obs[:, 0] = seq
            t.obs[:, 1] = t.actions[:, 0]
            t.rewards[:] = seq
            t.publish_frame(seq)
    finally:
        t.close()
        report.send(("done", batches, errors))


def stalling_engine(name: str, report: Connection) -> None:
    """Answers commands, then never publishes a frame once actions arrive."""
    t = SharedMemoryTransport(2, 2, 1, name=name)
    report.send(("ready", t.name))
    try:
        t.wait_for_actions()
        time.sleep(60)
    finally:
        t.close()


def failing_engine(name: str, report: Connection) -> None:
    """Serves Reset with a handler that raises."""

    def handler(message: object) -> object:
        if isinstance(message, cmd.ResetRequest):
            raise ValueError("no such scene")
        return None

    t = SharedMemoryTransport(2, 2, 1, name=name)
    report.send(("ready", t.name))
    try:
        while t.wait_for_actions(handler) is not None:
            t.publish_frame()
    finally:
        t.close()


def spec_engine(name: str, report: Connection) -> None:
    """An engine as another language would write it: spaces as wire specs, no pickles.

    2 envs, Box(-10, 10, (2,)) float32 observations, Discrete(3) actions (int64 rows, as
    ``RowCodec`` packs them); each step obs = [action, step count] and reward = action.
    """
    obs_spec = cmd.SpaceSpec("Box", (2,), "float32", [-10.0, -10.0], [10.0, 10.0])
    act_spec = cmd.SpaceSpec("Discrete", (), "int64", n=3, start=[0])
    t = SharedMemoryTransport(2, 2, 2, name=name)
    t.schema = cmd.GetSchemaResponse(2, 2, 2, obs_spec, act_spec)
    actions = t.actions.view("int64")[:, 0]

    def handle(message: object) -> object:
        if isinstance(message, cmd.ResetRequest):
            ids = message.env_ids or [0, 1]
            t.obs[ids] = 0.0
            return cmd.ResetResponse(env_ids=ids, infos=[{} for _ in ids])
        return None

    report.send(("ready", t.name))
    try:
        while (seq := t.wait_for_actions(handle)) is not None:
            t.obs[:, 0] = actions
            t.obs[:, 1] = seq
            t.rewards[:] = actions
            t.publish_frame(seq)
    finally:
        t.close()


def command_spin_engine(name: str, report: Connection, command_spin: float) -> None:
    """Steps (obs[:, 0] = batch number) and answers commands with the given command spin."""
    t = SharedMemoryTransport(2, 2, 1, name=name, command_spin=command_spin)
    report.send(("ready", t.name))
    try:
        while (seq := t.wait_for_actions()) is not None:
            t.obs[:, 0] = seq
            t.publish_frame(seq)
    finally:
        t.close()
