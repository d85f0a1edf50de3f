"""The worker process, its lifecycle (:mod:`.lifecycle`) and control sessions on it."""
