"""The dashboard: the web page at `/` where a person runs the whole bench.

A front end like the CLI and MCP, in the same server process: Jinja2 pages
(`pages.py`, `templates/`), the small JSON routes they post to and poll
(`api.py`, under `/ui/api/`), our own JS and CSS (`static/`, no library,
no CDN: it works offline), the login, session and CSRF (`auth.py`), sign-in
with a provider (`signin.py`) and the Quotas chart (`chart.py`). Every
read and change goes through `backend.Backend`, the one seam onto the
bench's rules; `fields.py` says which form field a refusal belongs to.
"""
