"""Execute example notebooks at full size and save their outputs to the paired ``.ipynb``.

``python examples/_execute.py [examples/NAME.py ...]`` (default: every ``examples/*.py`` whose
name does not start with ``_``), one at a time, in a Jupyter kernel (``python3``) whose working
directory is ``examples/`` and which imports this checkout of the package. ``make examples``
runs it.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import jupytext
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def notebooks(args: list[str]) -> list[Path]:
    if args:
        return [Path(arg).resolve() for arg in args]
    return sorted(p for p in HERE.glob("*.py") if not p.name.startswith("_"))


def main() -> None:
    os.environ.pop("EXAMPLES_FAST", None)  # full size
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"  # figures inline
    for path in notebooks(sys.argv[1:]):
        notebook = jupytext.read(path)
        start = time.perf_counter()
        NotebookClient(
            notebook, timeout=1800, kernel_name="python3", resources={"metadata": {"path": HERE}}
        ).execute()
        jupytext.write(notebook, path.with_suffix(".ipynb"))
        print(f"{path.name}: executed in {time.perf_counter() - start:.0f} s", flush=True)


if __name__ == "__main__":
    main()
