"""A run's control protocol: :mod:`.control_relay` (commands to the worker, its replies
back), :mod:`.control_socket` (the run's ``control.sock``), :mod:`.control_client`
(``mosaic control``'s side), :mod:`.control_keys` (p/c/s in the live view) and
:mod:`.run_control` (all of them for one run)."""
