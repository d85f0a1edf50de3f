"""The {{ cookiecutter.worker_type }} MOSAIC worker (see README.md).

Modules: ``plugin`` (the hooks the SDK calls), ``config`` (the config model), ``runtime`` (one
run), ``telemetry`` (what the run reports), ``cli`` (the command line the runner starts){% if cookiecutter.include_fastlane %}, ``fastlane`` (live frames){% endif %}.
"""

__version__ = {{ cookiecutter.version|py_str }}

#: The entry-point name under ``mosaic.workers`` (``mosaic run <WORKER_TYPE>``).
WORKER_TYPE = {{ cookiecutter.worker_type|py_str }}
