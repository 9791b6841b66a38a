"""Sphinx configuration: PyData theme, MyST pages, notebooks rendered from their saved outputs,
API reference from the numpydoc docstrings. Builds offline (no intersphinx).

`make docs` runs ``sphinx-build -W --keep-going docs docs/_build/html``.
"""

from __future__ import annotations

import inspect
import json
import shutil
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
# The packages of this checkout first, whatever is installed in the environment: the samplers and
# the benchmark harness (its own distribution, bench/), which the API page documents.
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

import pymc_kernel_steps  # noqa: E402

project = "pymc-kernel-steps"
author = "the pymc-kernel-steps developers"
copyright = "the pymc-kernel-steps developers"
release = pymc_kernel_steps.__version__
version = release

extensions = [
    "myst_nb",  # MyST markdown pages and notebooks (registers myst_parser itself)
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "numpydoc",
]

source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = [
    "_build",
    "Thumbs.db",
    ".DS_Store",
    # tidy frames, scripts and figures of benchmark runs are not pages
    "benchmarks/**/*.py",
]

# ---------------------------------------------------------------- MyST and notebooks
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
# Notebooks are shown with the outputs saved in them; `make test` executes them.
nb_execution_mode = "off"

# ---------------------------------------------------------------- API reference
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # the numpydoc Parameters sections say it in words
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# ---------------------------------------------------------------- no network
intersphinx_mapping: dict = {}

# ---------------------------------------------------------------- HTML
html_theme = "pydata_sphinx_theme"
html_title = f"pymc-kernel-steps {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_static_path: list[str] = []
html_show_sourcelink = False


# ---------------------------------------------------------------- example notebooks
EXAMPLES_SOURCE = ROOT / "examples"
EXAMPLES_PAGES = DOCS / "examples"  # generated at build time; not in git


def copy_example_notebooks() -> list[str]:
    """Copy ``examples/*.ipynb`` into ``docs/examples/`` and write its index page.

    Sphinx reads only its source directory, so the notebooks (kept at the repository's root,
    where ``make test`` executes them) are copied in on every build. The index lists whatever
    notebooks exist, or says that there are none yet, so that the build works either way.
    """
    if EXAMPLES_PAGES.exists():
        shutil.rmtree(EXAMPLES_PAGES)
    EXAMPLES_PAGES.mkdir()
    notebooks = sorted(EXAMPLES_SOURCE.glob("*.ipynb")) if EXAMPLES_SOURCE.is_dir() else []
    for notebook in notebooks:
        content = json.loads(notebook.read_text(encoding="utf-8"))
        # A notebook written by jupytext or nbformat may lack the language metadata that
        # Jupyter adds, and its code cells would then be shown without highlighting (a warning).
        metadata = content.setdefault("metadata", {})
        metadata.setdefault("language_info", {"name": "python", "pygments_lexer": "ipython3"})
        metadata.setdefault(
            "kernelspec", {"name": "python3", "display_name": "Python 3", "language": "python"}
        )
        (EXAMPLES_PAGES / notebook.name).write_text(json.dumps(content), encoding="utf-8")
    lines = [
        "# Examples",
        "",
        "Notebooks on real models, each compared with what a PyMC user would otherwise use. They",
        "are shown with the outputs saved in them; `make test` runs every one at a reduced size",
        "and checks its key claim. Their sources are in `examples/` (each `.ipynb` with a",
        "jupytext twin).",
        "",
    ]
    if notebooks:
        lines += ["```{toctree}", ":maxdepth: 1", ""]
        lines += [notebook.stem for notebook in notebooks]
        lines += ["```", ""]
    else:
        lines += ["No notebook has been added yet.", ""]
    (EXAMPLES_PAGES / "index.md").write_text("\n".join(lines), encoding="utf-8")
    return [notebook.stem for notebook in notebooks]


copy_example_notebooks()


# ---------------------------------------------------------------- benchmark result pages
def _title_untitled_result_pages(app, docname, source):
    """Give a title to a result page under ``benchmarks/`` that has none (a bare table written
    by a script), from its path, so that it can be listed in the navigation. The files
    themselves are written by the benchmark scripts and are not edited."""
    if not docname.startswith("benchmarks/"):
        return
    text = source[0]
    if any(line.startswith("# ") for line in text.splitlines()):
        return
    title = " / ".join(docname.split("/")[1:])
    source[0] = f"# {title}\n\n{text}"


# ---------------------------------------------------------------- step signatures
def _step_signature(app, what, name, obj, options, signature, return_annotation):
    """The real signature of a step class. PyMC's ``BlockedStep.__new__(cls, *args, **kwargs)``
    would otherwise be shown; Python's own ``inspect.signature`` (what ``help()`` shows) finds
    the class's ``__init__``. Annotations are left out, as everywhere in this reference."""
    from pymc.step_methods.compound import BlockedStep

    if what != "class" or not (isinstance(obj, type) and issubclass(obj, BlockedStep)):
        return None
    parameters = [
        parameter.replace(annotation=inspect.Parameter.empty)
        for parameter in inspect.signature(obj).parameters.values()
    ]
    return str(inspect.Signature(parameters)), return_annotation


def setup(app):
    app.connect("source-read", _title_untitled_result_pages)
    app.connect("autodoc-process-signature", _step_signature)
