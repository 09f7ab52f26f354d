"""The examples' lock clients as modules, for the test clients that differ from one in
a single request: examples/<name>/lock_client.py, loaded by its path (the examples'
folders are no packages)."""

import importlib.util
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def lock_client(name):
    """The module examples/<name>/lock_client.py; its serve() is not started."""
    path = EXAMPLES / name / "lock_client.py"
    spec = importlib.util.spec_from_file_location(f"{name.replace('-', '_')}_lock_client", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
