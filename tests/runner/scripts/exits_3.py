"""Plays one episode, then exits with status 3."""

import sys

import gymnasium as gym

env = gym.make("CartPole-v1")
env.reset(seed=1)
done = False
while not done:
    _, _, terminated, truncated, _ = env.step(env.action_space.sample())
    done = terminated or truncated
env.close()
sys.exit(3)
