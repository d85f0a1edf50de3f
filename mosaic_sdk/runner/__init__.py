"""Running workers as child processes: launch preparation, supervision, the SQLite store and
the live view behind ``mosaic run``."""
