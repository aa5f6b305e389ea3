"""The `benchwarmers` (alias `bench`) command line; `main.py` holds the app."""
