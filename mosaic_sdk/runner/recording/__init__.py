"""From a worker's lines to stored rows and the plugins: :mod:`.recorder` builds one run's chain
(:mod:`.batching`, :mod:`.ingest`, the store writer, :mod:`.notify`), and :mod:`.outcome`
decides how the run ended."""
