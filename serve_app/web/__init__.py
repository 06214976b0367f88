"""The try-it page (`/` and `/web/...`): its route and its static files (`static/`)."""
