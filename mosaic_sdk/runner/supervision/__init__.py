"""The worker process and its lifecycle: :mod:`.launch` (the prepared run),
:mod:`.preflight`, :mod:`.process` (``WorkerProcess``), :mod:`.proctree`, :mod:`.stdin`,
:mod:`.lines`, :mod:`.signals`, :mod:`.lifecycle` (``RunLifecycle``, the one supervision of a
worker), and control sessions on it (:mod:`.session_launch`, :mod:`.session_lifecycle`)."""
