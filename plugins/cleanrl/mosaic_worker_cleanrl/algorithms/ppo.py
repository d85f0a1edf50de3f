"""Proximal Policy Optimization for discrete actions, in one file, for gymnasium 1.x.

Written for this worker in the spirit of CleanRL's single-file scripts: read it top to bottom.
Run it bare (``python -m mosaic_worker_cleanrl.algorithms.ppo --env-id CartPole-v1``) or through the
worker, which adds telemetry and FastLane from the outside without touching this file.

The network is one of the worker's agents (:mod:`mosaic_worker_cleanrl.agents`), chosen from the
observation space (``--agent auto``): MiniGrid and BabyAI envs go through MiniGrid's
``ImgObsWrapper`` and get the CNN agent on their 7x7x3 view; flat observations get the MLP.

What it does, per iteration:
1. collect ``num_steps`` steps from ``num_envs`` envs (a ``SyncVectorEnv`` in SAME_STEP
   autoreset mode, so the observation after a ``done`` is already the next episode's first);
   a truncated episode bootstraps from the value of its final observation;
2. compute advantages with GAE(lambda);
3. run ``update_epochs`` passes of clipped-surrogate updates over shuffled minibatches;
4. write TensorBoard scalars, and every ``checkpoint_every`` iterations (and at the end,
   unless ``--no-save-model``) a checkpoint holding the network, the optimizer and the step counter.

``--resume-from PATH`` continues such a checkpoint (or a bare state dict of either agent, with a
fresh optimizer): same network and optimizer state, and the
step counter goes on from where it stopped; ``--total-timesteps`` then counts the new steps
(and, with ``--anneal-lr``, the learning rate decays again over them).
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

from mosaic_worker_cleanrl.agents import load_policy, make_agent, save_checkpoint
from mosaic_worker_cleanrl.env_families import register_env_families, wrap_observations


@dataclass
class Args:
    exp_name: str = "ppo"
    """name of this experiment (part of the TensorBoard run name)"""
    seed: int = 1
    """seed of python, numpy, torch and the envs"""
    torch_deterministic: bool = True
    """torch.backends.cudnn.deterministic"""
    cuda: bool = False
    """use CUDA when it is available"""
    torch_threads: int = 1
    """torch CPU threads (small networks are fastest on one)"""
    track: bool = False
    """log to Weights & Biases"""
    wandb_project_name: str = "mosaic-cleanrl"
    """W&B project"""
    wandb_entity: str | None = None
    """W&B entity (team or user)"""
    capture_video: bool = False
    """record videos of the first env's episodes to videos/<run_name> (needs moviepy)"""
    save_model: bool = True
    """save a checkpoint at the end of the run"""
    tensorboard_dir: str = "runs"
    """where TensorBoard event files go (a sub-directory per run)"""
    checkpoint_dir: str = "checkpoints"
    """where checkpoints go"""
    checkpoint_every: int = 0
    """save a checkpoint every N iterations (0: only at the end)"""
    resume_from: str | None = None
    """continue training from this checkpoint"""

    env_id: str = "CartPole-v1"
    """gymnasium env id"""
    total_timesteps: int = 500_000
    """env steps to collect in this run"""
    learning_rate: float = 2.5e-4
    """Adam learning rate"""
    num_envs: int = 4
    """parallel envs"""
    num_steps: int = 128
    """steps per env per rollout"""
    anneal_lr: bool = True
    """decay the learning rate linearly to 0 over the run"""
    gamma: float = 0.99
    """discount factor"""
    gae_lambda: float = 0.95
    """lambda of generalised advantage estimation"""
    num_minibatches: int = 4
    """minibatches per epoch"""
    update_epochs: int = 4
    """passes over each rollout"""
    norm_adv: bool = True
    """normalise advantages per minibatch"""
    clip_coef: float = 0.2
    """surrogate clipping coefficient"""
    clip_vloss: bool = True
    """clip the value loss too"""
    ent_coef: float = 0.01
    """entropy bonus coefficient"""
    vf_coef: float = 0.5
    """value loss coefficient"""
    max_grad_norm: float = 0.5
    """gradient clipping norm"""
    target_kl: float | None = None
    """stop the epoch loop early above this approximate KL"""
    hidden_size: int = 64
    """width of the MLP agent's two hidden layers"""
    agent: str = "auto"
    """auto (from the observation space), mlp or minigrid_cnn"""


def make_env(env_id: str, seed: int, video_dir: str | None = None):
    def thunk():
        register_env_families()  # MiniGrid / BabyAI ids, in whichever process builds the env
        if video_dir is not None:
            env = gym.make(env_id, render_mode="rgb_array")
            env = gym.wrappers.RecordVideo(env, video_dir)
        else:
            env = gym.make(env_id)
        env = wrap_observations(env)
        env = gym.wrappers.RecordEpisodeStatistics(env)
        env.action_space.seed(seed)
        return env

    return thunk


def main(args: Args) -> None:
    run_name = f"{args.env_id.replace('/', '_')}__{args.exp_name}__{args.seed}__{int(time.time())}"
    batch_size = args.num_envs * args.num_steps
    minibatch_size = batch_size // args.num_minibatches
    num_iterations = max(1, args.total_timesteps // batch_size)

    if args.track:
        import wandb  # optional dependency: only with --track

        wandb.init(
            project=args.wandb_project_name,
            entity=args.wandb_entity,
            config=vars(args),
            name=run_name,
        )
    from torch.utils.tensorboard import SummaryWriter  # needs tensorboard, an optional dependency

    writer = SummaryWriter(os.path.join(args.tensorboard_dir, run_name))
    writer.add_text("hyperparameters", "\n".join(f"{k}={v}" for k, v in vars(args).items()))

    # Seeding: the run is reproducible on CPU for a given seed.
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.backends.cudnn.deterministic = args.torch_deterministic
    torch.set_num_threads(max(1, args.torch_threads))
    device = torch.device("cuda" if torch.cuda.is_available() and args.cuda else "cpu")

    envs = gym.vector.SyncVectorEnv(
        [
            make_env(
                args.env_id,
                args.seed + i,
                f"videos/{run_name}" if i == 0 and args.capture_video else None,
            )
            for i in range(args.num_envs)
        ],
        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP,
    )
    global_step, start_iteration = 0, 0
    if args.resume_from:  # the checkpoint's agent, checked against these envs
        policy = load_policy(args.resume_from, envs, device)
        agent = policy.agent.train()
        optimizer = optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)
        if policy.optimizer is not None:
            optimizer.load_state_dict(policy.optimizer)
        global_step, start_iteration = policy.global_step, policy.iteration
        print(f"resumed from {args.resume_from} ({policy.kind}) at global_step={global_step}")
    else:
        agent = make_agent(envs, args.agent, args.hidden_size).to(device)
        optimizer = optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)
    print(f"agent: {agent.kind} {agent.config()}")
    checkpoint_dir = Path(args.checkpoint_dir)

    # Rollout storage (observations are kept prepared for the network).
    input_shape = agent.input_shape
    obs = torch.zeros((args.num_steps, args.num_envs, *input_shape), device=device)
    actions = torch.zeros((args.num_steps, args.num_envs), device=device)
    logprobs = torch.zeros((args.num_steps, args.num_envs), device=device)
    rewards = torch.zeros((args.num_steps, args.num_envs), device=device)
    dones = torch.zeros((args.num_steps, args.num_envs), device=device)
    values = torch.zeros((args.num_steps, args.num_envs), device=device)

    start_time, start_cpu, start_step = time.time(), time.process_time(), global_step
    raw_obs, _ = envs.reset(seed=args.seed)
    next_obs = agent.prepare(raw_obs)
    next_done = torch.zeros(args.num_envs, device=device)
    iteration = start_iteration
    for i in range(1, num_iterations + 1):
        iteration = start_iteration + i
        if args.anneal_lr:
            optimizer.param_groups[0]["lr"] = args.learning_rate * (1.0 - (i - 1) / num_iterations)

        # 1. Collect a rollout.
        for step in range(args.num_steps):
            global_step += args.num_envs
            obs[step], dones[step] = next_obs, next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs)
            values[step], actions[step], logprobs[step] = value.flatten(), action, logprob

            raw_obs, reward, terminations, truncations, infos = envs.step(action.cpu().numpy())
            reward = torch.as_tensor(reward, dtype=torch.float32, device=device)
            final = infos.get("final_info", {})
            if truncations.any():  # a time limit is not a terminal state: bootstrap from it
                finals = infos["final_obs"]
                for k in np.flatnonzero(truncations & ~terminations):
                    with torch.no_grad():
                        v = agent.get_value(agent.prepare(np.asarray(finals[k])[None]))
                    reward[k] += args.gamma * v.item()
            rewards[step] = reward
            next_obs = agent.prepare(raw_obs)
            next_done = torch.as_tensor(
                np.logical_or(terminations, truncations), dtype=torch.float32, device=device
            )
            if "episode" in final:
                for k in np.flatnonzero(final["_episode"]):
                    ep_return = float(final["episode"]["r"][k])
                    ep_length = int(final["episode"]["l"][k])
                    print(f"global_step={global_step}, episodic_return={ep_return}")
                    writer.add_scalar("charts/episodic_return", ep_return, global_step)
                    writer.add_scalar("charts/episodic_length", ep_length, global_step)

        # 2. Advantages with GAE; dones[t] marks that obs[t] starts a new episode.
        with torch.no_grad():
            next_value = agent.get_value(next_obs).flatten()
            advantages = torch.zeros_like(rewards)
            last_gae = torch.zeros(args.num_envs, device=device)
            for t in reversed(range(args.num_steps)):
                if t == args.num_steps - 1:
                    not_done, following = 1.0 - next_done, next_value
                else:
                    not_done, following = 1.0 - dones[t + 1], values[t + 1]
                delta = rewards[t] + args.gamma * following * not_done - values[t]
                last_gae = delta + args.gamma * args.gae_lambda * not_done * last_gae
                advantages[t] = last_gae
            returns = advantages + values

        # 3. Optimise the clipped surrogate over minibatches.
        b_obs = obs.reshape(-1, *input_shape)
        b_actions, b_logprobs = actions.reshape(-1), logprobs.reshape(-1)
        b_advantages, b_returns, b_values = (
            advantages.reshape(-1),
            returns.reshape(-1),
            values.reshape(-1),
        )
        indices = np.arange(batch_size)
        clipfracs = []
        for _epoch in range(args.update_epochs):
            np.random.shuffle(indices)
            for start in range(0, batch_size, minibatch_size):
                mb = indices[start : start + minibatch_size]
                _, new_logprob, entropy, new_value = agent.get_action_and_value(
                    b_obs[mb], b_actions.long()[mb]
                )
                log_ratio = new_logprob - b_logprobs[mb]
                ratio = log_ratio.exp()
                with torch.no_grad():
                    approx_kl = ((ratio - 1) - log_ratio).mean()
                    clipfracs.append(((ratio - 1.0).abs() > args.clip_coef).float().mean().item())

                mb_adv = b_advantages[mb]
                if args.norm_adv:
                    mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                pg_loss = torch.max(
                    -mb_adv * ratio,
                    -mb_adv * torch.clamp(ratio, 1 - args.clip_coef, 1 + args.clip_coef),
                ).mean()

                new_value = new_value.view(-1)
                if args.clip_vloss:
                    v_unclipped = (new_value - b_returns[mb]) ** 2
                    v_clipped = b_values[mb] + torch.clamp(
                        new_value - b_values[mb], -args.clip_coef, args.clip_coef
                    )
                    v_loss = 0.5 * torch.max(v_unclipped, (v_clipped - b_returns[mb]) ** 2).mean()
                else:
                    v_loss = 0.5 * ((new_value - b_returns[mb]) ** 2).mean()

                entropy_loss = entropy.mean()
                loss = pg_loss - args.ent_coef * entropy_loss + v_loss * args.vf_coef
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()
            if args.target_kl is not None and approx_kl > args.target_kl:
                break

        # 4. Report, and checkpoint now and then.
        y_pred, y_true = b_values.cpu().numpy(), b_returns.cpu().numpy()
        var_y = np.var(y_true)
        explained_var = np.nan if var_y == 0 else 1 - np.var(y_true - y_pred) / var_y
        sps = int((global_step - start_step) / (time.time() - start_time))
        cpu_sps = int((global_step - start_step) / max(time.process_time() - start_cpu, 1e-9))
        writer.add_scalar("charts/learning_rate", optimizer.param_groups[0]["lr"], global_step)
        writer.add_scalar("losses/value_loss", v_loss.item(), global_step)
        writer.add_scalar("losses/policy_loss", pg_loss.item(), global_step)
        writer.add_scalar("losses/entropy", entropy_loss.item(), global_step)
        writer.add_scalar("losses/approx_kl", approx_kl.item(), global_step)
        writer.add_scalar("losses/clipfrac", float(np.mean(clipfracs)), global_step)
        writer.add_scalar("losses/explained_variance", explained_var, global_step)
        writer.add_scalar("charts/SPS", sps, global_step)
        writer.add_scalar("charts/SPS_cpu", cpu_sps, global_step)  # steps per CPU second
        if args.checkpoint_every and i % args.checkpoint_every == 0 and i < num_iterations:
            path = checkpoint_dir / f"ppo_{global_step:09d}.pt"
            save(path, agent, optimizer, args, global_step, iteration)

    if args.save_model:
        path = checkpoint_dir / f"ppo_{global_step:09d}.pt"
        save(path, agent, optimizer, args, global_step, iteration)
        print(f"checkpoint saved to {path}")
    envs.close()
    writer.close()


def save(path: Path, agent, optimizer, args: Args, step: int, iteration: int) -> None:
    save_checkpoint(path, agent, optimizer, global_step=step, iteration=iteration,
                    env_id=args.env_id, args=asdict(args))  # fmt: skip


if __name__ == "__main__":
    import tyro

    main(tyro.cli(Args))
