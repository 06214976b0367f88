"""The workers: Ray Serve deployments and detached actors, one subpackage per feature.

Shared by every feature, at the top: `config` (each owner's typed settings), `types` (the domain objects
that travel between deployments), `errors`, `metrics` and `retry`. A feature's modules whose names start
with `_` are its own; other features and the HTTP edge (`serve_app/`) use only its public modules.
"""
