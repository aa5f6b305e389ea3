"""The HTTP server: one FastAPI app (`app.create_app`), the guard in front of
it, and the routes other packages mount into it (`routes/__init__.py`)."""
