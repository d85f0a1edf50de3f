"""flatc output for schema/shm_commands.fbs (do not edit)."""
