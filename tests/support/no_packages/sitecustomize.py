"""Loaded by python3 when this folder is on PYTHONPATH (tests only): torch, numpy and matplotlib
then look missing, whatever is installed, so the tests can check the scripts' one-line message."""
import sys


class _LooksMissing:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "numpy", "matplotlib"):
            raise ModuleNotFoundError(f"No module named '{name}'", name=name)
        return None


sys.meta_path.insert(0, _LooksMissing())
