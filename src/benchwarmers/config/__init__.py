"""Where things live outside the store: the data folder, endpoint keys, and
the settings the CLI and `/bench/settings` change."""
