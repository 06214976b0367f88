"""The nexara/OpenAI REST API: one route module per resource (`routes` gathers them), their request and
response bodies (`schemas`) and the form's readers. Results are rendered by `serve_app.rendering`, which every
protocol shares."""
