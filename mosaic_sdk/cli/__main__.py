"""``python -m mosaic_sdk.cli ...``: the ``mosaic`` command without its console script."""

import sys

from mosaic_sdk.cli import main

sys.exit(main())
