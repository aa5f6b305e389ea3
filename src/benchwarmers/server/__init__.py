"""The HTTP server: one FastAPI app (`app.create_app`), the guard in front of
it, and its own routers (`routes/__init__.py`); the composition root
(`benchwarmers/assembly.py`) mounts them beside the dashboard's.

The defaults live here, not in `app`, so the CLI can name them without
importing FastAPI for every command."""

from benchwarmers.config import environment

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8122
# Where `serve --workers N` tells each worker the address it listens on (`server/run.py`).
BIND_HOST_ENV = environment.BIND_HOST.name
