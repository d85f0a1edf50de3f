"""Refuse names that would make a broken or shadowing worker, before any file is written.

Cookiecutter renders this file with the answers (embedded as Python string literals) and runs
it; a non-zero exit makes cookiecutter remove the half-made project directory. The rules live
in ``mosaic_sdk.scaffold.naming`` so that ``mosaic new`` and this hook agree.
"""

import sys

ANSWERS = {
    "worker_name": {{ cookiecutter.worker_name|py_str }},
    "package_name": {{ cookiecutter.package_name|py_str }},
    "distribution_name": {{ cookiecutter.distribution_name|py_str }},
    "worker_type": {{ cookiecutter.worker_type|py_str }},
    "description": {{ cookiecutter.description|py_str }},
    "author": {{ cookiecutter.author|py_str }},
    "email": {{ cookiecutter.email|py_str }},
    "env_id": {{ cookiecutter.env_id|py_str }},
    "env_family": {{ cookiecutter.env_family|py_str }},
    "paradigm": {{ cookiecutter.paradigm|py_str }},
    "version": {{ cookiecutter.version|py_str }},
    "sdk_requirement": {{ cookiecutter.sdk_requirement|py_str }},
}


def main() -> int:
    try:
        from mosaic_sdk.scaffold.naming import check_answers, installed_worker_types
    except ImportError:
        print(
            "error: this template needs mosaic-worker-sdk in the interpreter that runs "
            "cookiecutter: pip install mosaic-worker-sdk, then use `mosaic new`",
            file=sys.stderr,
        )
        return 1
    problems = check_answers(ANSWERS, installed_workers=installed_worker_types())
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
