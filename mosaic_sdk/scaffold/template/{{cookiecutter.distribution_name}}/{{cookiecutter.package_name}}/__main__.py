"""``python -m {{ cookiecutter.package_name }}`` runs the worker's command line."""

import sys

from .cli import main

sys.exit(main())
