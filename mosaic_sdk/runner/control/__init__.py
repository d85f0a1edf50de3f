"""A run's control protocol: relay, socket, client, keys, and all of them for one run."""
