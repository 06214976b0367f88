"""The nexara/OpenAI REST API: one route module per resource (`routes` gathers them), their request and
response bodies (`schemas`), the form's readers, and the rendering of results."""
