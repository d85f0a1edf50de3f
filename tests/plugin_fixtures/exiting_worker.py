"""A worker module that calls sys.exit at import time."""

import sys

sys.exit(3)
