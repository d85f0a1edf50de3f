"""A worker module that ends the process while it is imported."""

import os

print("HOSTILE-PRINT at import")
os._exit(3)
