"""`stt`: the command-line client of the service (typer + rich), installed as a console script."""
