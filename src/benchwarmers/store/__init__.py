"""The store: every table in schema.py, the engine in db.py."""
