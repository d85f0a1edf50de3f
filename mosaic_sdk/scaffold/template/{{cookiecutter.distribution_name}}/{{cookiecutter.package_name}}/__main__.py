"""``python -m {{ cookiecutter.package_name }}`` runs the worker's command line."""

import sys

from {{ cookiecutter.package_name }}.cli import main

sys.exit(main())
