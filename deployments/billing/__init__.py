"""Billing: what each key is charged (the usage ledger) and how fast it may call (the rate limiter), each a
detached actor shared by every ingress replica."""
