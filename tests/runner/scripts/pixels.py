"""An env of its own that renders rgb_array, stepped until a file appears: its frames go to
FastLane without the script asking for it."""

import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np


class Pixels(gym.Env):
    metadata = {"render_modes": ["rgb_array"], "render_fps": 30}

    def __init__(self, render_mode=None):
        self.render_mode = render_mode
        self.observation_space = gym.spaces.Box(0.0, 1.0, (2,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.zeros(2, np.float32), 1.0, self.t >= 25, False, {}

    def render(self):
        frame = np.zeros((32, 48, 3), np.uint8)
        frame[:, : self.t % 48, 0] = 255
        return frame


gym.register("Pixels-v0", entry_point=Pixels)
stop = Path(sys.argv[1])
env = gym.make("Pixels-v0", render_mode="rgb_array")
env.reset(seed=0)
while not stop.exists():
    _, _, terminated, truncated, _ = env.step(0)
    if terminated or truncated:
        env.reset()
    time.sleep(0.005)
env.close()
