"""Where things live outside the store: the data folder, endpoint keys, and
the settings the dashboard and CLI change."""
