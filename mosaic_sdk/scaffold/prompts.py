"""``mosaic new``'s questions, each answer checked as soon as it is typed."""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

#: ``check(key, value)`` returns the problems of one answer (empty: accepted).
AnswerCheck = Callable[[str, Any], list[str]]


def prompt_each(context: dict[str, Any], check: AnswerCheck) -> OrderedDict[str, Any]:
    """Ask every variable of a cookiecutter ``context`` (as ``generate_context`` makes it)."""
    # cookiecutter and jinja2 only when questions are asked (start-up time)
    from cookiecutter.prompt import (
        prompt_choice_for_config,
        read_user_variable,
        read_user_yes_no,
        render_variable,
    )
    from cookiecutter.utils import create_env_with_context

    env = create_env_with_context(context)
    variables = dict(context["cookiecutter"])
    prompts = variables.pop("__prompts__", {})
    answers: OrderedDict[str, Any] = OrderedDict()
    public = [k for k in variables if not k.startswith("_")]
    for key, raw in variables.items():
        if key.startswith("_"):
            private = key.startswith("__")
            answers[key] = render_variable(env, raw, answers) if private else raw
            continue
        prefix = f"  [dim][{public.index(key) + 1}/{len(public)}][/] "
        if isinstance(raw, list):
            answers[key] = prompt_choice_for_config(answers, env, key, raw, False, prompts, prefix)
            continue
        default = raw if isinstance(raw, bool) else render_variable(env, raw, answers)
        while True:
            if isinstance(raw, bool):
                value = read_user_yes_no(key, default, prompts, prefix)
            else:
                value = read_user_variable(key, default, prompts, prefix)
            problems = check(key, value)
            if not problems:
                break
            for problem in problems:
                print(f"error: {problem}; try again", file=sys.stderr, flush=True)
        answers[key] = value
    return answers
