"""The agents package: the two architectures, the choice from spaces, checkpoints and loading."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
gymnasium = pytest.importorskip("gymnasium")
np = pytest.importorskip("numpy")

from mosaic_worker_cleanrl.agents import (  # noqa: E402
    CHECKPOINT_FORMAT,
    MinigridAgent,
    MLPAgent,
    load_policy,
    make_agent,
    save_checkpoint,
)

Box, Discrete, Dict = gymnasium.spaces.Box, gymnasium.spaces.Discrete, gymnasium.spaces.Dict


class Spaces:
    """Stands in for an env: only the spaces matter to the agents."""

    def __init__(self, obs, act):
        self.observation_space, self.action_space = obs, act


GRID = Spaces(Box(0, 255, (7, 7, 3), np.uint8), Discrete(7))
VECTOR = Spaces(Box(-1, 1, (4,), np.float32), Discrete(2))


def test_minigrid_agent_is_the_seed_architecture() -> None:
    agent = make_agent(GRID)
    assert isinstance(agent, MinigridAgent) and agent.kind == "minigrid_cnn"
    convs = [m for m in agent.cnn.network if isinstance(m, torch.nn.Conv2d)]
    assert [(c.in_channels, c.out_channels, c.kernel_size, c.padding) for c in convs] == [
        (3, 32, (3, 3), (1, 1)), (64 // 2, 64, (3, 3), (1, 1)), (64, 64, (3, 3), (1, 1))
    ]  # fmt: skip
    assert (agent.cnn.fc[0].in_features, agent.cnn.fc[0].out_features) == (3136, 128)
    for head, out in ((agent.actor, 7), (agent.critic, 1)):
        linears = [m for m in head if isinstance(m, torch.nn.Linear)]
        assert [(m.in_features, m.out_features) for m in linears] == [(128, 128), (128, out)]
        assert isinstance(head[1], torch.nn.ReLU)
    # orthogonal init: the rows of a (128, 3136) weight are orthogonal with norm sqrt(2)
    w = agent.cnn.fc[0].weight.detach()
    assert torch.allclose(w @ w.T, 2.0 * torch.eye(128), atol=1e-3)
    obs = np.random.default_rng(0).integers(0, 11, size=(5, 7, 7, 3), dtype=np.uint8)
    action, logprob, entropy, value = agent.get_action_and_value(agent.prepare(obs))
    assert action.shape == logprob.shape == entropy.shape == (5,) and value.shape == (5, 1)


def test_the_observation_space_picks_the_agent() -> None:
    assert isinstance(make_agent(VECTOR), MLPAgent)
    frozen = make_agent(Spaces(Discrete(16), Discrete(4)))
    assert isinstance(frozen, MLPAgent) and frozen.one_hot and frozen.obs_size == 16
    assert isinstance(make_agent(GRID, "mlp"), MLPAgent)  # asked for: a flat 147-input MLP
    with pytest.raises(TypeError, match="wrap_observations"):
        make_agent(Spaces(Dict({"image": GRID.observation_space}), Discrete(7)))
    with pytest.raises(TypeError, match="too large"):
        make_agent(Spaces(Box(0, 255, (210, 160, 3), np.uint8), Discrete(6)))
    with pytest.raises(TypeError, match="Discrete actions"):
        make_agent(Spaces(VECTOR.observation_space, Box(-1, 1, (2,))))
    with pytest.raises(TypeError, match=r"\(H, W, 3\) uint8"):
        make_agent(VECTOR, "minigrid_cnn")


def _save(path: Path, agent) -> Path:
    opt = torch.optim.Adam(agent.parameters(), lr=1e-3)
    save_checkpoint(path, agent, opt, global_step=512, iteration=2, env_id="X-v0", args={})
    return path


@pytest.mark.parametrize("spaces", [GRID, VECTOR], ids=["cnn", "mlp"])
def test_checkpoints_record_their_agent_and_load_back(tmp_path: Path, spaces) -> None:
    agent = make_agent(spaces)
    path = _save(tmp_path / "a.pt", agent)
    raw = torch.load(path, weights_only=True)
    assert raw["format"] == CHECKPOINT_FORMAT and raw["agent_kind"] == agent.kind
    policy = load_policy(path, spaces)
    assert policy.kind == agent.kind and policy.source == "mosaic"
    assert (policy.global_step, policy.iteration, policy.env_id) == (512, 2, "X-v0")
    assert policy.optimizer is not None
    for key, value in agent.state_dict().items():
        assert torch.equal(policy.agent.state_dict()[key], value)
    obs = spaces.observation_space.sample()
    assert 0 <= policy.act(obs) < spaces.action_space.n


def test_a_checkpoint_without_agent_kind_is_read_as_the_mlp(tmp_path: Path) -> None:
    # What the worker wrote before agents/ existed: the MLP fields, no agent_kind.
    agent = MLPAgent(4, 2, 64)
    old = {"format": CHECKPOINT_FORMAT, "agent": agent.state_dict(), "optimizer": {},
           "global_step": 1024, "iteration": 2, "obs_size": 4, "n_actions": 2,
           "one_hot": False, "hidden_size": 64, "env_id": "CartPole-v1", "args": {}}  # fmt: skip
    torch.save(old, tmp_path / "old.pt")
    policy = load_policy(tmp_path / "old.pt", VECTOR)
    assert policy.kind == "mlp" and policy.global_step == 1024 and policy.env_id == "CartPole-v1"


def test_bare_state_dicts_follow_the_cnn_prefix_convention(tmp_path: Path) -> None:
    cnn, mlp_agent = make_agent(GRID), MLPAgent(16, 4, 32, one_hot=True)
    torch.save(cnn.state_dict(), tmp_path / "cnn.pt")
    torch.save(mlp_agent.state_dict(), tmp_path / "mlp.pt")
    policy = load_policy(tmp_path / "cnn.pt", GRID)
    assert (policy.kind, policy.source, policy.global_step) == ("minigrid_cnn", "state_dict", 0)
    frozen = Spaces(Discrete(16), Discrete(4))
    policy = load_policy(tmp_path / "mlp.pt", frozen)  # one-hot learnt from the env
    assert policy.kind == "mlp" and policy.agent.one_hot and policy.agent.hidden == 32
    # The platform's earlier CNN layout: heads read the 3136 conv features directly.
    earlier = MinigridAgent(7, features=None)
    assert earlier.actor[0].in_features == 3136
    torch.save(earlier.state_dict(), tmp_path / "earlier.pt")
    policy = load_policy(tmp_path / "earlier.pt", GRID)
    assert policy.agent.features is None and 0 <= policy.act(GRID.observation_space.sample()) < 7


def test_loading_says_what_does_not_fit(tmp_path: Path) -> None:
    path = _save(tmp_path / "grid.pt", make_agent(GRID))
    with pytest.raises(ValueError, match="7 actions, the env 2"):
        load_policy(path, Spaces(GRID.observation_space, Discrete(2)))
    with pytest.raises(ValueError, match="CNN agent sees"):
        load_policy(path, Spaces(Box(0, 255, (5, 5, 3), np.uint8), Discrete(7)))
    torch.save({"format": "someone-else/3"}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="someone-else/3"):
        load_policy(tmp_path / "other.pt")
    with pytest.raises(ValueError, match="does not exist"):
        load_policy(tmp_path / "missing.pt")


class _Payload:
    def __reduce__(self):
        return (print, ("a checkpoint ran code",))


def test_a_checkpoint_cannot_run_code(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "evil.pt").write_bytes(pickle.dumps(_Payload()))
    with pytest.raises(ValueError, match="read safely"):
        load_policy(tmp_path / "evil.pt")
    assert "ran code" not in capsys.readouterr().out
