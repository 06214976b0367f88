"""Storage every feature shares: the spool (uploads and decoded audio on disk) and the cluster's detached
actors, created one way."""
