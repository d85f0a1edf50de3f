"""`python -m mosaic_worker_example` runs the worker's CLI."""

import sys

from mosaic_worker_example.cli import main

sys.exit(main())
