"""`stt` is a thin client: importing it loads none of the server's modules nor their heavy libraries, so that it
installs and starts as an HTTP client alone."""

import json
import subprocess
import sys
from pathlib import Path

SERVER_SIDE = ("serve_app", "deployments", "fastapi", "starlette", "ray", "torch", "numpy")


def test_the_cli_imports_no_server_module_nor_server_library() -> None:
    """In a fresh interpreter: this test process has imported most of them already."""
    code = (
        "import json, sys; import stt_cli.main; "
        f"print(json.dumps(sorted({{name.split('.')[0] for name in sys.modules}} & set({SERVER_SIDE!r}))))"
    )
    root = Path(__file__).resolve().parents[1]  # stt_cli/ from this checkout, installed or not
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    assert json.loads(run.stdout) == []
