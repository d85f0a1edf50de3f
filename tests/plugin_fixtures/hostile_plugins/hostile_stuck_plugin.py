"""A mosaic.plugins plugin (an observer) whose import never returns."""

import threading

threading.Event().wait()
