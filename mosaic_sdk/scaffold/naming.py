"""Rules for the names and texts a new worker is baked with."""

from __future__ import annotations

import keyword
import re
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from mosaic_sdk.scaffold.sdk_source import check_sdk_requirement

#: Import packages shipped by this SDK or its in-repository workers, and the platform's own
#: (``cleanrl_worker`` is the platform's CleanRL worker; ours is ``mosaic_worker_cleanrl``).
SDK_PACKAGES: frozenset[str] = frozenset(
    {
        "mosaic_sdk",
        "mosaic_worker_example",
        "mosaic_worker_cleanrl",
        "cleanrl_worker",
        "gym_gui",
        "mosaic",
    }
)

#: Distributions of this SDK, its workers and the platform (normalised, PEP 503).
SDK_DISTRIBUTIONS: frozenset[str] = frozenset(
    {
        "mosaic-worker-sdk",
        "mosaic-worker-example",
        "mosaic-worker-cleanrl",
        "cleanrl-worker",
        "mosaic-cleanrl",  # the platform's CleanRL worker (import package cleanrl_worker)
        "mosaic",  # taken on PyPI by an unrelated project
        "mosaic-sdk",  # taken on PyPI by an unrelated project
        "gym-gui",
    }
)

#: MOSAIC-looking names that belong to unrelated projects on PyPI.
TAKEN_ON_PYPI: frozenset[str] = frozenset({"mosaic", "mosaic-sdk"})

#: Worker types of the workers in the SDK's repository.
SDK_WORKER_TYPES: frozenset[str] = frozenset({"example", "cleanrl"})

#: Popular distributions (normalised) a new worker must not shadow, with their import names.
POPULAR_PACKAGES: Mapping[str, str] = {
    **{
        name: name
        for name in (
            "numpy scipy pandas torch torchvision tensorflow jax flax gymnasium gym mujoco "
            "pettingzoo cleanrl ray wandb tensorboard requests urllib3 certifi pydantic pluggy "
            "pytest setuptools pip wheel build twine cookiecutter rich click typer six packaging "
            "flatbuffers matplotlib tqdm transformers jinja2 flask django boto3"
        ).split()
    },
    "ale-py": "ale_py",
    "stable-baselines3": "stable_baselines3",
    "attrs": "attr",
    "protobuf": "google",
    "grpcio": "grpc",
    "scikit-learn": "sklearn",
    "pillow": "PIL",
    "opencv-python": "cv2",
    "pyyaml": "yaml",
}

_PACKAGE_RE = re.compile(r"[a-z_][a-z0-9_]*")
_DISTRIBUTION_RE = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?")
_WORKER_TYPE_RE = re.compile(r"[A-Za-z0-9_.-]+")
_ENV_ID_RE = re.compile(r"(?:[\w:.-]+/)?[\w:.-]+?(?:-v\d+)?")
_EMAIL_RE = re.compile(r"[^@\s<>,\"]+@[^@\s<>,\"]+\.[^@\s<>,\"]+")
_MAX_TEXT = 300
_MAX_PACKAGE = 60

#: The free-text answers and what they are called in messages.
FREE_TEXT_FIELDS: Mapping[str, str] = {
    "worker_name": "the display name",
    "description": "the description",
    "author": "the author",
    "email": "the email",
}


def normalize_distribution(name: str) -> str:
    """The PEP 503 normalised form of a distribution name (``My_Pkg.x`` -> ``my-pkg-x``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def suggest_package_name(text: str) -> str:
    """A valid package name made from ``text`` (lowercase, ``_`` for anything else)."""
    cleaned = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "worker"
    if cleaned[0].isdigit() or keyword.iskeyword(cleaned):
        cleaned = f"{cleaned}_worker" if not cleaned[0].isdigit() else f"worker_{cleaned}"
    return cleaned


def check_package_name(name: str) -> list[str]:
    """Problems with ``name`` as the worker's import package (empty when fine)."""
    if not name:
        return ["package_name is empty; give a lowercase Python identifier, e.g. my_worker"]
    if not _PACKAGE_RE.fullmatch(name):
        return [
            f"package_name {name!r} is not a valid import name; use lowercase ASCII letters, "
            f"digits and _ not starting with a digit, e.g. {suggest_package_name(name)!r}"
        ]
    if len(name) > _MAX_PACKAGE:
        return [
            f"package_name {name!r} is {len(name)} characters long; keep it to {_MAX_PACKAGE} "
            "(set package_name=... to a shorter name)"
        ]
    if keyword.iskeyword(name) or name.strip("_") == "":
        return [
            f"package_name {name!r} is a Python keyword (or only underscores) and cannot be "
            f"imported; use e.g. {suggest_package_name(name + '_worker')!r}"
        ]
    if name in SDK_PACKAGES:
        return [
            f"package_name {name!r} is a package of the MOSAIC SDK; choose a name of your own, "
            f"e.g. 'mosaic_worker_{name.split('_')[-1]}_custom'"
        ]
    if name in sys.stdlib_module_names:
        return [
            f"package_name {name!r} would shadow the standard library module of that name; "
            f"use e.g. {name + '_worker'!r}"
        ]
    popular = {imp: dist for dist, imp in POPULAR_PACKAGES.items()}
    if name in popular:
        return [
            f"package_name {name!r} is the import name of the popular package "
            f"{popular[name]!r} and would shadow it; use e.g. {'mosaic_worker_' + name!r}"
        ]
    return []


def check_distribution_name(name: str) -> list[str]:
    """Problems with ``name`` as the distribution name on a package index."""
    if not name:
        return ["distribution_name is empty; give a name such as mosaic-worker-mine"]
    if not _DISTRIBUTION_RE.fullmatch(name) or not name.isascii():
        suggestion = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "mosaic-worker-mine"
        return [
            f"distribution_name {name!r} is not a valid package name (PEP 508: ASCII letters, "
            f"digits, '.', '_' and '-', starting and ending with a letter or digit); "
            f"use e.g. {suggestion!r}"
        ]
    normalized = normalize_distribution(name)
    if normalized in SDK_DISTRIBUTIONS:
        taken = " (taken on PyPI by an unrelated project)" if normalized in TAKEN_ON_PYPI else ""
        return [
            f"distribution_name {name!r} is a MOSAIC name{taken}; choose your own, "
            f"e.g. 'mosaic-worker-{normalized.split('-')[-1]}-custom'"
        ]
    if normalized in POPULAR_PACKAGES:
        return [
            f"distribution_name {name!r} is the popular package {normalized!r} on PyPI and "
            f"would shadow it; use e.g. {'mosaic-worker-' + normalized!r}"
        ]
    return []


def check_worker_type(name: str, installed: Mapping[str, str | None] | None = None) -> list[str]:
    """Problems with ``name`` as the worker type (the ``mosaic.workers`` entry-point name).

    ``installed`` maps worker types already installed to the distribution providing them.
    """
    if not name:
        return ["worker_type is empty; give a short name such as my_agent"]
    if not _WORKER_TYPE_RE.fullmatch(name) or len(name) > 64:
        suggestion = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_")[:64] or "my_agent"
        return [
            f"worker_type {name!r} may only hold ASCII letters, digits, '_', '.' and '-' "
            f"(at most 64); use e.g. {suggestion!r}"
        ]
    if name in SDK_WORKER_TYPES:
        return [
            f"worker_type {name!r} is a worker of the MOSAIC SDK; choose another, "
            f"e.g. {'my_' + name!r}"
        ]
    if installed and name in installed:
        source = installed[name] or "another distribution"
        return [
            f"worker_type {name!r} is already installed (from {source}); two workers with one "
            f"name both become unavailable, so choose another, e.g. {name + '2'!r}"
        ]
    return []


def check_text(field: str, value: Any) -> list[str]:
    """Problems with a free-text answer: it must be one printable line of valid Unicode."""
    label = FREE_TEXT_FIELDS.get(field, field)
    if not isinstance(value, str):
        return [f"{field} must be text, got {type(value).__name__}"]
    if any(0xD800 <= ord(c) <= 0xDFFF for c in value):
        return [f"{field} ({label}) holds bytes that are not valid UTF-8; retype it"]
    if "\n" in value or "\r" in value:
        return [
            f"{field} ({label}) must be a single line: it goes into the package metadata; "
            "put longer text into the README after baking"
        ]
    bad = sorted({f"U+{ord(c):04X}" for c in value if not c.isprintable()})
    if bad:
        return [f"{field} ({label}) contains control characters {', '.join(bad)}; remove them"]
    if len(value) > _MAX_TEXT:
        return [f"{field} ({label}) is {len(value)} characters long; keep it to {_MAX_TEXT}"]
    return []


def check_email(value: str) -> list[str]:
    """Problems with the author's email (empty is allowed)."""
    problems = check_text("email", value)
    if problems or not value:
        return problems
    if not _EMAIL_RE.fullmatch(value):
        return [f"email {value!r} does not look like an address (user@host.tld); fix or clear it"]
    return []


def check_env_id(value: str) -> list[str]:
    """Problems with the default gymnasium env id."""
    if not value or not _ENV_ID_RE.fullmatch(value):
        return [
            f"env_id {value!r} is not a gymnasium env id; use the form Name-vN, "
            "e.g. 'CartPole-v1' or 'ALE/Pong-v5'"
        ]
    return []


_VERSION_RE = re.compile(r"\d+(\.\d+)*((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?")


#: The gymnasium env families the template bakes (``gymnasium.make(env_id)``, one agent).
GYMNASIUM_FAMILIES: tuple[str, ...] = (
    "gymnasium",
    "classic_control",
    "toy_text",
    "box2d",
    "atari",
    "mujoco",
    "custom",
)
#: The paradigms the template bakes, per env family: a single-agent gymnasium loop, a
#: PettingZoo AEC loop (agents in turn) or a PettingZoo parallel loop (agents at once).
BAKEABLE: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(GYMNASIUM_FAMILIES, ("sequential",)),
    "pettingzoo": ("turn_based", "simultaneous"),
}


def bakeable_pairs() -> str:
    """The env_family/paradigm pairs the template bakes, in one line."""
    by_paradigms: dict[tuple[str, ...], list[str]] = {}
    for family, paradigms in BAKEABLE.items():
        by_paradigms.setdefault(paradigms, []).append(family)
    return "; ".join(
        f"paradigm={' or '.join(paradigms)} with env_family={', '.join(families)}"
        for paradigms, families in by_paradigms.items()
    )


def check_combination(env_family: Any, paradigm: Any) -> list[str]:
    """Problems with an env family and paradigm the template cannot bake together."""
    if paradigm in BAKEABLE.get(str(env_family), ()):
        return []
    return [
        f"the template cannot bake env_family={env_family} with paradigm={paradigm}; "
        f"it bakes {bakeable_pairs()} (pick one of those and adapt the worker)"
    ]


_MODULE_RE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+")


def check_pettingzoo_env_id(value: str) -> list[str]:
    """Problems with the env id of a PettingZoo worker: the module of its env."""
    if not _MODULE_RE.fullmatch(value or ""):
        return [
            f"env_id {value!r} is not the module of a PettingZoo env; use its dotted path, "
            "e.g. 'pettingzoo.classic.tictactoe_v3' (turn_based) or "
            "'pettingzoo.classic.rps_v2' (simultaneous)"
        ]
    return []


def check_version(value: str) -> list[str]:
    """Problems with the first version number (a plain PEP 440 version such as 0.1.0)."""
    if not _VERSION_RE.fullmatch(value):
        return [f"version {value!r} is not a PEP 440 version; use e.g. '0.1.0'"]
    return []


def check_choice(field: str, value: Any, choices: Iterable[str]) -> list[str]:
    """Problems with an answer that must be one of ``choices``."""
    options = list(choices)
    if value not in options:
        return [f"{field} {value!r} is not one of {', '.join(options)}"]
    return []


def check_field(
    field: str,
    value: Any,
    *,
    installed_workers: Mapping[str, str | None] | None = None,
    choices: Mapping[str, Iterable[str]] | None = None,
) -> list[str]:
    """The problems of one answer (empty: fine); fields without rules have none.

    ``mosaic new`` calls it as each prompt is answered, to ask again at once.
    """
    text = str(value if value is not None else "")
    if field in ("worker_name", "description", "author"):
        problems = check_text(field, value if value is not None else "")
        if field == "worker_name" and not text.strip():
            problems.append("worker_name is empty; give the worker a display name, e.g. 'My Agent'")
        return problems
    rules = {
        "email": check_email,
        "package_name": check_package_name,
        "distribution_name": check_distribution_name,
        "env_id": check_env_id,
        "version": check_version,
        "sdk_requirement": check_sdk_requirement,
    }
    if field in rules:
        return rules[field](text)
    if field == "worker_type":
        return check_worker_type(text, installed_workers)
    if choices and field in choices:
        return check_choice(field, value, choices[field])
    return []


def check_answers(
    answers: Mapping[str, Any],
    *,
    installed_workers: Mapping[str, str | None] | None = None,
    choices: Mapping[str, Iterable[str]] | None = None,
) -> list[str]:
    """Every problem with a full set of template answers, one line each (empty: all fine).

    ``choices`` maps choice fields (license, paradigm, env_family) to their allowed values;
    ``installed_workers`` is what :func:`installed_worker_types` returns.
    """
    problems: list[str] = []
    for field in (*FREE_TEXT_FIELDS, "package_name", "distribution_name", "worker_type", "env_id"):
        problems += check_field(field, answers.get(field, ""), installed_workers=installed_workers)
    problems += check_version(str(answers.get("version", "0.1.0")))
    if "sdk_requirement" in answers:
        problems += check_field("sdk_requirement", answers["sdk_requirement"])
    for field, allowed in (choices or {}).items():
        problems += check_choice(field, answers.get(field), allowed)
    family, paradigm = answers.get("env_family"), answers.get("paradigm")
    if family is not None and paradigm is not None:
        problems += check_combination(family, paradigm)
    if family == "pettingzoo":
        problems += check_pettingzoo_env_id(str(answers.get("env_id", "")))
    return problems


def installed_worker_types() -> dict[str, str | None]:
    """Names of the ``mosaic.workers`` entry points installed here, with their distribution.

    Reads entry-point metadata only; no worker is imported.
    """
    from importlib import metadata  # only when installed workers are read (start-up time)

    found: dict[str, str | None] = {}
    for ep in metadata.entry_points(group="mosaic.workers"):
        dist = getattr(ep, "dist", None)
        found[ep.name] = dist.metadata["Name"] if dist is not None else None
    return found
