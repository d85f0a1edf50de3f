"""Named by a mosaic.plugins entry point, but implements no hook."""

NOT_A_PLUGIN = 42
