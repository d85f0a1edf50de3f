"""A plain Gymnasium vector-env loop with a tensorboardX SummaryWriter, knowing nothing of
MOSAIC: it writes what it saw itself (--out) so a test can compare the run with it."""

import argparse
import json
import time

import gymnasium as gym
import numpy as np
from tensorboardX import SummaryWriter

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=150)
parser.add_argument("--num-envs", type=int, default=3)
parser.add_argument("--out", default="seen.json")
parser.add_argument("--progress", default=None, help="write the loop index here each step")
parser.add_argument("--delay", type=float, default=0.0, help="seconds per loop step")
parser.add_argument("--checkpoint", action="store_true", help="register a checkpoint")
parser.add_argument("--async-envs", action="store_true")
args = parser.parse_args()

if args.checkpoint:
    import mosaic_sdk.script

    def save() -> str:
        with open("model.txt", "w") as f:
            f.write("weights\n")
        return "model.txt"

    mosaic_sdk.script.on_checkpoint(save)

mode = "async" if args.async_envs else "sync"
envs = gym.make_vec(
    "CartPole-v1", num_envs=args.num_envs, vectorization_mode=mode, max_episode_steps=30
)
envs = gym.wrappers.vector.RecordEpisodeStatistics(envs)
writer = SummaryWriter("tb")
seen = {"returns": [], "lengths": [], "scalars": 0}
obs, _ = envs.reset(seed=7)
for step in range(args.steps):
    obs, rewards, terminated, truncated, infos = envs.step(envs.action_space.sample())
    if "episode" in infos:
        for i in np.flatnonzero(infos["_episode"]):
            seen["returns"].append(float(infos["episode"]["r"][i]))
            seen["lengths"].append(int(infos["episode"]["l"][i]))
            writer.add_scalar("charts/episodic_return", infos["episode"]["r"][i], step)
            seen["scalars"] += 1
    if step % 10 == 0:
        writer.add_scalars("losses", {"value": 1.0 / (step + 1), "policy": 0.5}, step)
        seen["scalars"] += 2
    if args.progress:
        with open(args.progress, "w") as f:
            f.write(str(step))
    if args.delay:
        time.sleep(args.delay)
writer.close()
envs.close()
with open(args.out, "w") as f:
    json.dump(seen, f)
print("done", len(seen["returns"]), "episodes")
