"""Writes binary to its stdout (and stderr) while it plays: the run's telemetry is unharmed."""

import json
import os
import sys

import gymnasium as gym

sys.stdout.buffer.write(bytes(range(256)) * 4)
sys.stdout.flush()
os.write(1, b'{"type": "episode", "not": "telemetry"}\n\x00\xff\xfe')
os.write(2, b"\x00\x01\x02 binary on stderr too\n")
env = gym.wrappers.RecordEpisodeStatistics(gym.make("CartPole-v1"))
returns = []
for episode in range(3):
    env.reset(seed=episode)
    done = False
    while not done:
        _, _, terminated, truncated, info = env.step(env.action_space.sample())
        done = terminated or truncated
        sys.stdout.buffer.write(b"\xde\xad\xbe\xef")
    returns.append(float(info["episode"]["r"]))
env.close()
with open(sys.argv[1], "w") as f:
    json.dump(returns, f)
