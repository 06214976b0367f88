"""Job callbacks at the edge: each ingress replica sends the outbox's due rows (deployments/callbacks/store.py)
as the job object its poll answers, signed (`signing`), to an address checked as a `url` input's (`target`)."""
