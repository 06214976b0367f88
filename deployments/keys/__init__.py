"""API keys managed while the service runs (the admin API's): stored by hash, changed with an audit trail."""
