class PreferencePolicy:
    """Softmax preferences over a discrete action space, restricted to the legal actions.

    Deliberately small: the preferences do not depend on the observation; after each game
    they move towards the actions of games that went better than average (a gradient
    bandit). It is here to show where learning goes, not to play well.
    """

    def __init__(self, n_actions: int, config: Config, seed: int | None) -> None:
        self.rng = np.random.default_rng(seed)
        self.learning_rate = config.learning_rate
        self.exploration = config.exploration
        self.preferences = np.zeros(n_actions)
        self.baseline = 0.0
        self.games_seen = 0

    def probabilities(self, mask: np.ndarray | None = None) -> np.ndarray:
        z = np.exp(self.preferences - self.preferences.max())
        if mask is not None:
            z = z * (np.asarray(mask) > 0)
        total = z.sum()
        if total <= 0:  # nothing legal has any weight: uniform over the legal actions
            z = np.ones_like(z) if mask is None else (np.asarray(mask) > 0).astype(float)
            total = z.sum()
        return z / total

    def act(self, mask: np.ndarray | None = None) -> int:
        """An action, legal under ``mask`` (1 = legal) when given."""
        legal = np.arange(len(self.preferences))
        if mask is not None:
            legal = np.flatnonzero(np.asarray(mask) > 0)
        if self.rng.random() < self.exploration:
            return int(self.rng.choice(legal))
        return int(self.rng.choice(len(self.preferences), p=self.probabilities(mask)))

    def greedy(self, mask: np.ndarray | None = None) -> int:
        """The most preferred legal action (the first of equals): the policy of play."""
        return int(np.argmax(self.probabilities(mask)))

    def state(self) -> dict[str, Any]:
        """What a checkpoint keeps."""
        return {
            "preferences": self.preferences.tolist(),
            "baseline": self.baseline,
            "games_seen": self.games_seen,
        }

    def learn(self, actions: list[int], game_return: float) -> None:
        """Move preferences towards this game's actions if it beat the running average."""
        self.games_seen += 1
        advantage = game_return - self.baseline
        self.baseline += (game_return - self.baseline) / self.games_seen
        if not actions:
            return
        counts = np.bincount(np.asarray(actions, dtype=np.int64), minlength=len(self.preferences))
        frequencies = counts / counts.sum()
        step = self.learning_rate * np.tanh(advantage)
        self.preferences += step * (frequencies - self.probabilities())


def make_policies(env: Any, agents: list[str], config: Config) -> dict[str, PreferencePolicy]:
    """One policy per agent, or one shared by all (``config.shared_policy``: self-play)."""
    n = int(env.action_space(agents[0]).n)
    if config.shared_policy:
        shared = PreferencePolicy(n, config, config.seed)
        return dict.fromkeys(agents, shared)
    return {
        agent: PreferencePolicy(
            int(env.action_space(agent).n), config, None if config.seed is None else config.seed + i
        )
        for i, agent in enumerate(agents)
    }


def save_checkpoint(ctx: RunContext, policies: dict[str, PreferencePolicy], steps: int) -> Path:
    """Write every agent's policy as JSON and report it (``checkpoint_saved``)."""
    path = ctx.run_dir / f"checkpoint-{steps}.json"
    path.write_text(json.dumps({a: p.state() for a, p in policies.items()}), encoding="utf-8")
    ctx.emitter.checkpoint_saved(checkpoint_path=str(path), step=steps)
    return path


{% if cookiecutter.include_fastlane -%}
def make_env(config: Config, *, frames: bool = False) -> Any:
    """The PettingZoo env of a run: ``config.env_id`` is its module. With ``frames`` (the
    games a run reports, and the one a person plays) and FastLane on, the game renders
    ``rgb_array`` frames of its board and the SDK's wrapper publishes them after every move
    to the run's stream and to each agent's. A game without an ``rgb_array`` render is
    wrapped all the same: the wrapper then says why it publishes nothing."""
    module = importlib.import_module(config.env_id)
    if not frames:
        return module.env()
    from .fastlane import fastlane_settings, wrap_for_fastlane

    fastlane = fastlane_settings(config)
    if not fastlane.enabled:
        return module.env()
    modes = getattr(getattr(module, "raw_env", None), "metadata", {}).get("render_modes", [])
    env = module.env(render_mode="rgb_array") if "rgb_array" in modes else module.env()
    return wrap_for_fastlane(env, config, fastlane)
{%- else -%}
def make_env(config: Config) -> Any:
    """The PettingZoo env of a run: ``config.env_id`` is its module."""
    module = importlib.import_module(config.env_id)
    return module.{{ "env" if cookiecutter.paradigm == "turn_based" else "parallel_env" }}({{ "" if cookiecutter.paradigm == "turn_based" else "max_cycles=config.max_cycles" }})
{%- endif %}
