"""Refuse names that would make a broken or shadowing worker, before any file is written.

Cookiecutter renders this file with the answers (embedded as Python string literals) and runs
it; a non-zero exit makes cookiecutter remove the half-made project directory. The rules live
in ``mosaic_sdk.scaffold.naming`` so that ``mosaic new`` and this hook agree.
"""

import sys

ANSWERS = {
{%- for key in ["worker_name", "package_name", "distribution_name", "worker_type", "description",
                "author", "email", "env_id", "env_family", "paradigm", "version", "sdk_requirement"] %}
    {{ key|py_str }}: {{ cookiecutter[key]|py_str }},
{%- endfor %}
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
