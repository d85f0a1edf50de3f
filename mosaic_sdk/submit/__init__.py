"""Running SDK workers inside MOSAIC: ``mosaic submit`` and what it knows of the platform."""
