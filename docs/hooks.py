"""MkDocs hook (mkdocs.yml ``hooks:``): adds the generated reference pages to every build.

The config reference comes from the pydantic models and the CLI reference from the argument parsers, both at
build time and only in memory, so the site always documents the code it was built from.
"""

from __future__ import annotations

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from reference_cli import render_cli_reference  # docs/ is on sys.path while MkDocs loads a hook
from reference_config import render_config_reference


def on_files(files: Files, config: MkDocsConfig) -> Files:
    files.append(File.generated(config, "reference/config.md", content=render_config_reference()))
    files.append(File.generated(config, "reference/cli.md", content=render_cli_reference()))
    return files
