"""From a worker's lines to stored rows and the plugins: :mod:`.recorder` (``RunRecorder``,
the recorder of every run), :mod:`.ingest` (parsing), :mod:`.batching`, :mod:`.observers`
(observer plugins) and :mod:`.outcome` (the end-of-run decision)."""
