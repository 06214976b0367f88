"""Billing: what a key pays and may still spend, and the one way work is charged (`pricing`); what each key
has been charged (the usage ledger) and how fast it may call (the rate limiter), each a detached actor shared
by every ingress replica."""
