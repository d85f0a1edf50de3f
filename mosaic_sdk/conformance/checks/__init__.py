"""The conformance checks, one module per family; the registry imports every module here."""
