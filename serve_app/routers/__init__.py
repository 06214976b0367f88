"""HTTP routers: one module per API resource."""
