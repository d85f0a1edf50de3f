"""``mosaic watch``: a browser view of a store's runs, served by the SDK itself."""
