"""The HTTP server: one FastAPI app (`app.create_app`), the guard in front of
it, and the routes other packages mount into it (`routes/__init__.py`).

The defaults live here, not in `app`, so the CLI can name them without
importing FastAPI for every command."""

from benchwarmers.config import environment

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8122
# Where `serve --workers N` tells each worker the address it listens on (`server/workers.py`).
BIND_HOST_ENV = environment.BIND_HOST.name
