"""A PPO learns the MuJoCo engine's ``reacher`` over ``ShmVectorEnv`` in minutes on 2 cores.

The engine is started as a user would (``launch_engine``, the same as ``mosaic engine mujoco``)
and the trainer attaches with ``ShmVectorEnv.attach``. A small PPO (Gaussian policy, GAE,
clipped objective; written here, torch CPU) trains on 16 envs; every few iterations the mean
episode return of the current policy's mean action is printed beside two baselines measured in
the same run: the zero action and uniformly random actions.

    python benchmarks/shm/ppo_engine.py [--iterations 60] [--envs 16]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from torch import nn

from mosaic_sdk.shm.engines.launch import launch_engine
from mosaic_sdk.shm.vector_env import ShmVectorEnv

EPISODE = 100  # the reacher's max_episode_steps: every env truncates at the same step


def evaluate(envs: ShmVectorEnv, act) -> float:  # noqa: ANN001
    """Mean return of one episode of every env, ``act(obs)`` choosing the actions."""
    obs, _ = envs.reset(seed=12345)
    total = np.zeros(envs.num_envs)
    for _ in range(EPISODE):
        obs, rewards, _, _, _ = envs.step(act(obs))
        total += rewards
    return float(total.mean())


class Agent(nn.Module):
    def __init__(self, obs_size: int, act_size: int) -> None:
        super().__init__()

        def mlp(out: int, scale: float) -> nn.Sequential:
            last = nn.Linear(64, out)
            nn.init.orthogonal_(last.weight, scale)
            nn.init.zeros_(last.bias)
            return nn.Sequential(
                nn.Linear(obs_size, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), last
            )

        self.critic = mlp(1, 1.0)
        self.actor = mlp(act_size, 0.01)
        self.log_std = nn.Parameter(torch.full((act_size,), -0.5))

    def dist(self, obs: torch.Tensor) -> torch.distributions.Normal:
        return torch.distributions.Normal(self.actor(obs), self.log_std.exp())


def train(envs: ShmVectorEnv, iterations: int, report_every: int, baselines: str) -> None:
    torch.manual_seed(0)
    n, obs_size = envs.num_envs, envs.single_observation_space.shape[0]
    act_size = envs.single_action_space.shape[0]
    agent = Agent(obs_size, act_size)
    opt = torch.optim.Adam(agent.parameters(), lr=1e-3)
    gamma, lam, clip = 0.99, 0.95, 0.2

    def greedy(obs: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return agent.actor(torch.as_tensor(obs, dtype=torch.float32)).clamp(-1, 1).numpy()

    start = time.perf_counter()
    print(f"iteration 0: policy {evaluate(envs, greedy):7.2f} | {baselines}")
    for it in range(1, iterations + 1):
        obs_buf = torch.zeros(EPISODE, n, obs_size)
        act_buf = torch.zeros(EPISODE, n, act_size)
        logp_buf = torch.zeros(EPISODE, n)
        rew_buf = torch.zeros(EPISODE, n)
        val_buf = torch.zeros(EPISODE + 1, n)
        obs, _ = envs.reset(seed=it * 1000)
        for t in range(EPISODE):
            o = torch.as_tensor(obs, dtype=torch.float32)
            with torch.no_grad():
                d = agent.dist(o)
                a = d.sample()
                logp_buf[t] = d.log_prob(a).sum(-1)
                val_buf[t] = agent.critic(o).squeeze(-1)
            obs_buf[t], act_buf[t] = o, a
            obs, rewards, _, _, _ = envs.step(a.clamp(-1, 1).numpy())
            rew_buf[t] = torch.as_tensor(rewards, dtype=torch.float32)
        adv = torch.zeros(EPISODE, n)  # the episode ends (truncation) after the last step
        gae = torch.zeros(n)
        for t in reversed(range(EPISODE)):
            delta = rew_buf[t] + gamma * val_buf[t + 1] * (t + 1 < EPISODE) - val_buf[t]
            gae = delta + gamma * lam * gae * (t + 1 < EPISODE)
            adv[t] = gae
        ret = (adv + val_buf[:EPISODE]).reshape(-1)
        b_obs, b_act = obs_buf.reshape(-1, obs_size), act_buf.reshape(-1, act_size)
        b_logp, b_adv = logp_buf.reshape(-1), adv.reshape(-1)
        for _ in range(8):
            for idx in torch.randperm(len(b_obs)).split(400):
                d = agent.dist(b_obs[idx])
                ratio = (d.log_prob(b_act[idx]).sum(-1) - b_logp[idx]).exp()
                a_n = (b_adv[idx] - b_adv[idx].mean()) / (b_adv[idx].std() + 1e-8)
                pg = -torch.min(ratio * a_n, ratio.clamp(1 - clip, 1 + clip) * a_n).mean()
                v = 0.5 * ((agent.critic(b_obs[idx]).squeeze(-1) - ret[idx]) ** 2).mean()
                opt.zero_grad()
                (pg + 0.5 * v).backward()
                nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
                opt.step()
        if it % report_every == 0 or it == iterations:
            elapsed = time.perf_counter() - start
            print(
                f"iteration {it}: policy {evaluate(envs, greedy):7.2f} | {baselines} | "
                f"{it * EPISODE * n} env steps, {elapsed:.0f} s"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=60)
    parser.add_argument("--envs", type=int, default=16)
    parser.add_argument("--report-every", type=int, default=10)
    args = parser.parse_args()
    torch.set_num_threads(1)
    with launch_engine(args.envs, "reacher") as engine:
        envs = ShmVectorEnv.attach(engine.name, timeout=60)
        try:
            rng = np.random.default_rng(0)
            zero = evaluate(envs, lambda o: np.zeros((len(o), 2), dtype=np.float32))
            rand = evaluate(envs, lambda o: rng.uniform(-1, 1, (len(o), 2)).astype(np.float32))
            train(envs, args.iterations, args.report_every, f"zero {zero:7.2f}, random {rand:7.2f}")
        finally:
            envs.client.close(shutdown_engine=True)
            envs.closed = True


if __name__ == "__main__":
    main()
