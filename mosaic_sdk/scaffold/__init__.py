"""Scaffolding of new workers: the cookiecutter template and the library behind ``mosaic new``."""

from __future__ import annotations

import contextlib
import difflib
import json
import re
import shlex
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from mosaic_sdk.scaffold import naming
from mosaic_sdk.scaffold.prompts import prompt_each
from mosaic_sdk.scaffold.sdk_source import default_sdk_requirement, from_index

#: The cookiecutter template of a worker package.
TEMPLATE_DIR = Path(__file__).resolve().with_name("template")

#: Answers that are choices, checked against the template's lists.
CHOICE_FIELDS: tuple[str, ...] = ("license", "paradigm", "env_family")


class ScaffoldError(Exception):
    """The answers, the output directory or the template cannot make a worker.

    ``problems`` holds one line per problem; ``str()`` joins them.
    """

    def __init__(self, problems: Iterable[str]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


@dataclass(frozen=True)
class BakeResult:
    """A baked worker: where it is and the answers it was made with."""

    project_dir: Path
    answers: dict[str, Any]

    @property
    def worker_type(self) -> str:
        return str(self.answers["worker_type"])

    def sdk_warning(self) -> str | None:
        """What to tell the author when the baked CI cannot install the SDK yet."""
        requirement = str(self.answers.get("sdk_requirement", ""))
        if requirement and not from_index(requirement):
            return None
        return (
            "note: mosaic-worker-sdk is not on the package index yet, so the baked CI "
            f"(.github/workflows/ci.yml) cannot install {requirement!r}; bake with "
            "sdk_requirement='mosaic-worker-sdk @ git+https://...' or edit that file "
            "(see docs/guides/publishing.md)"
        )

    def next_commands(self) -> list[str]:
        """The three commands to run next: enter, install (with the test extra the baked
        tests need), check."""
        return [
            f"cd {shlex.quote(str(self.project_dir))}",
            "pip install -e '.[test]'",
            f"mosaic conformance {shlex.quote(self.worker_type)}",
        ]


def template_dir() -> Path:
    """The template's directory; raises ScaffoldError when the installation lacks it."""
    if not (TEMPLATE_DIR / "cookiecutter.json").is_file():
        raise ScaffoldError(
            [
                f"the worker template is missing from this installation ({TEMPLATE_DIR}); "
                "reinstall mosaic-worker-sdk"
            ]
        )
    return TEMPLATE_DIR


def template_variables() -> dict[str, Any]:
    """The template's variables and their defaults (``cookiecutter.json``), private ones too."""
    return dict(json.loads((template_dir() / "cookiecutter.json").read_text(encoding="utf-8")))


def public_keys() -> list[str]:
    """The variables a user may set (``key=value`` on the command line)."""
    return [k for k in template_variables() if not k.startswith("_")]


def parse_assignments(items: Iterable[str]) -> dict[str, Any]:
    """Parse ``key=value`` arguments into overrides; unknown keys are an error with a hint."""
    keys = public_keys()
    overrides: dict[str, Any] = {}
    problems: list[str] = []
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            problems.append(f"{item!r} is not of the form key=value (keys: {', '.join(keys)})")
            continue
        if key not in keys:
            close = difflib.get_close_matches(key, keys, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            problems.append(f"unknown key {key!r}; {hint}known keys: {', '.join(keys)}")
            continue
        overrides[key] = value
    if problems:
        raise ScaffoldError(problems)
    return overrides


_JINJA_END_RAW = re.compile(r"{%-?\s*endraw")


def protect_value(value: Any) -> Any:
    """Make ``value`` survive cookiecutter's rendering of answers unchanged.

    Cookiecutter renders every answer as a Jinja template, so ``{{ x }}`` in an author name
    would be evaluated; such text is wrapped in ``{% raw %}``.
    """
    if not isinstance(value, str) or "{" not in value:
        return value
    if _JINJA_END_RAW.search(value):
        raise ScaffoldError([f"{value!r} contains a Jinja '{{% endraw %}}' tag; remove it"])
    return "{% raw %}" + value + "{% endraw %}"


@contextlib.contextmanager
def _template_on_path() -> Iterator[None]:
    # The template's Jinja filters (local_extensions.py) are imported from its directory.
    path = str(template_dir())
    sys.path.insert(0, path)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(path)


_YES = ("1", "true", "t", "yes", "y", "on")
_NO = ("0", "false", "f", "no", "n", "off")


def _check_override_types(overrides: Mapping[str, Any]) -> list[str]:
    # Choice and yes/no variables, checked here so the message names the key and the options.
    problems: list[str] = []
    for key, default in template_variables().items():
        if key not in overrides:
            continue
        value = overrides[key]
        if isinstance(default, list) and value not in default:
            problems += naming.check_choice(key, value, default)
        elif isinstance(default, bool) and not isinstance(value, bool):
            if str(value).strip().lower() not in _YES + _NO:
                problems.append(f"{key} {value!r} is not yes/no; use {key}=yes or {key}=no")
    return problems


def resolve_answers(
    overrides: Mapping[str, Any] | None = None,
    *,
    no_input: bool = True,
    config_file: str | Path | None = None,
) -> dict[str, Any]:
    """Every public template variable, from ``overrides``, prompts (unless ``no_input``) and
    the defaults (derived names are rendered from the answers before them)."""
    # cookiecutter and jinja2 only when a worker is baked (start-up time)
    from cookiecutter.config import get_user_config
    from cookiecutter.generate import generate_context
    from cookiecutter.prompt import prompt_for_config

    overrides = dict(overrides or {})
    problems = [
        f"unknown key {k!r}; known keys: {', '.join(public_keys())}"
        for k in sorted(set(overrides) - set(public_keys()))
    ]
    problems += _check_override_types(overrides)
    if problems:
        raise ScaffoldError(problems)
    user_config = get_user_config(config_file=str(config_file) if config_file else None)
    defaults = {
        "sdk_requirement": protect_value(default_sdk_requirement()),
        **(user_config.get("default_context") or {}),
    }
    with _template_on_path():
        try:
            context = generate_context(
                context_file=str(template_dir() / "cookiecutter.json"),
                default_context=defaults,
                extra_context={k: protect_value(v) for k, v in overrides.items()},
            )
        except ValueError as exc:  # a value outside a choice list
            raise ScaffoldError([str(exc)]) from None
        if no_input:
            answers = prompt_for_config(context, True)
        else:  # ask again at once when an answer is refused
            installed = naming.installed_worker_types()
            answers = prompt_each(context, partial(naming.check_field, installed_workers=installed))
    return {k: v for k, v in answers.items() if not k.startswith("_")}


def check_answers(answers: Mapping[str, Any]) -> list[str]:
    """Every problem with ``answers`` (names, texts, choices), one line each."""
    variables = template_variables()
    choices = {f: variables[f] for f in CHOICE_FIELDS if isinstance(variables.get(f), list)}
    return naming.check_answers(
        answers, installed_workers=naming.installed_worker_types(), choices=choices
    )


def _yes(value: Any) -> bool:
    return value is True or str(value).strip().lower() in _YES


#: The default description of a PettingZoo worker, by paradigm (the template's default
#: speaks of a gymnasium environment; the answer comes before the paradigm is known).
PETTINGZOO_DESCRIPTIONS = {
    "turn_based": "A MOSAIC worker whose agents learn a PettingZoo game, taking turns",
    "simultaneous": "A MOSAIC worker whose agents learn a PettingZoo game, acting at once",
}


def _pettingzoo_defaults(answers: dict[str, Any], overrides: Mapping[str, Any]) -> list[str]:
    """The answers a PettingZoo worker is baked with: FastLane for a turn-based game (its board
    goes to the run's stream and to each agent's, through the SDK's AEC wrapper), none for a
    simultaneous one (each agent's view per stream, which the template does not bake yet: the
    default is switched off, an explicit yes refused), and a description of its own unless
    one was given."""
    if answers.get("env_family") != "pettingzoo":
        return []
    if "description" not in overrides and answers.get("description") == (
        template_variables().get("description")
    ):
        paradigm = str(answers.get("paradigm"))
        answers["description"] = PETTINGZOO_DESCRIPTIONS.get(paradigm, answers["description"])
    if answers.get("paradigm") == "turn_based" or not _yes(answers.get("include_fastlane")):
        return []
    if "include_fastlane" in overrides and _yes(overrides["include_fastlane"]):
        return [
            "include_fastlane=yes cannot be baked with env_family=pettingzoo and "
            f"paradigm={answers.get('paradigm')} (the template publishes FastLane frames for "
            "gymnasium families and pettingzoo turn_based games only); use include_fastlane=no"
        ]
    answers["include_fastlane"] = False
    return []


def bake(
    output_dir: str | Path,
    overrides: Mapping[str, Any] | None = None,
    *,
    no_input: bool = True,
    config_file: str | Path | None = None,
) -> BakeResult:
    """Bake a worker project into ``output_dir/<distribution_name>``.

    Raises :class:`ScaffoldError` (and writes nothing) when an answer is refused or the project
    directory exists. ``config_file`` is a cookiecutter user config (to keep cookiecutter's
    replay files out of the home directory, point its ``replay_dir`` elsewhere).
    """
    # cookiecutter and jinja2 only when a worker is baked (start-up time)
    from cookiecutter.exceptions import CookiecutterException
    from cookiecutter.main import cookiecutter

    answers = resolve_answers(overrides, no_input=no_input, config_file=config_file)
    problems = _pettingzoo_defaults(answers, overrides or {})
    problems += check_answers(answers)
    if problems:
        raise ScaffoldError(problems)
    out = Path(output_dir)
    project_dir = out / str(answers["distribution_name"])
    if project_dir.exists():
        raise ScaffoldError(
            [
                f"{project_dir} already exists; choose another directory with -o or another "
                "distribution_name=..."
            ]
        )
    try:
        made = cookiecutter(
            str(template_dir()),
            no_input=True,
            extra_context={k: protect_value(v) for k, v in answers.items()},
            output_dir=str(out),
            config_file=str(config_file) if config_file else None,
        )
    except (CookiecutterException, OSError) as exc:
        raise ScaffoldError([f"baking failed: {exc}"]) from exc
    return BakeResult(Path(made), dict(answers))


__all__ = [
    "CHOICE_FIELDS",
    "TEMPLATE_DIR",
    "BakeResult",
    "ScaffoldError",
    "bake",
    "check_answers",
    "parse_assignments",
    "protect_value",
    "public_keys",
    "resolve_answers",
    "template_dir",
    "template_variables",
]
