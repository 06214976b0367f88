"""Job callbacks: the outbox of deliveries (`store.py`); the edge sends them (serve_app/callbacks/)."""
