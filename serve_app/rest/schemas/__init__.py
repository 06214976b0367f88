"""The REST API's request and response bodies, one module per resource."""
