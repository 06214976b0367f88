"""`stt`: the command-line client of the service (typer + rich), installed as a console script. A thin client:
it speaks HTTP to the service and imports none of its modules (tests/test_cli_imports.py)."""
