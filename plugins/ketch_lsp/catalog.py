"""The built-in servers: which program, for which files, with which options.

Each is started only when its program is found (see :mod:`ketch_lsp.servers`) and a
file of its language is touched. Options switch off what would make a server run a
project's code or reach the network where the server has such a switch (rust-analyzer's
build scripts and proc macros, its ``cargo check`` on save); the sandbox bounds the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PYTHON = ["*.py", "*.pyi"]
TYPESCRIPT = ["*.ts", "*.tsx", "*.mts", "*.cts", "*.js", "*.jsx", "*.mjs", "*.cjs"]
C_FAMILY = ["*.c", "*.h", "*.cc", "*.cpp", "*.cxx", "*.hh", "*.hpp", "*.hxx", "*.m", "*.mm"]

# LSP language ids by suffix (servers that serve several languages need the right one).
LANGUAGE_IDS = {
    ".py": "python",
    ".pyi": "python",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "typescriptreact",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascriptreact",
    ".go": "go",
    ".rs": "rust",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hh": "cpp",
    ".hpp": "cpp",
    ".hxx": "cpp",
    ".m": "objective-c",
    ".mm": "objective-cpp",
}


@dataclass(frozen=True)
class Builtin:
    name: str
    # Candidate programs, first found wins: (program name, arguments).
    programs: tuple[tuple[str, tuple[str, ...]], ...]
    patterns: tuple[str, ...]
    root_markers: tuple[str, ...]
    initialization_options: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)


_PYRIGHT_ANALYSIS = {"diagnosticMode": "openFilesOnly", "autoSearchPaths": True}

BUILTINS: tuple[Builtin, ...] = (
    Builtin(
        "pyright",
        (("basedpyright-langserver", ("--stdio",)), ("pyright-langserver", ("--stdio",))),
        tuple(PYTHON),
        ("pyproject.toml", "pyrightconfig.json", "setup.py", "setup.cfg", ".git"),
        settings={
            "python": {"analysis": dict(_PYRIGHT_ANALYSIS)},
            "basedpyright": {"analysis": dict(_PYRIGHT_ANALYSIS)},
        },
    ),
    Builtin(
        "ruff",
        (("ruff", ("server",)),),
        tuple(PYTHON),
        ("pyproject.toml", "ruff.toml", ".ruff.toml", ".git"),
    ),
    Builtin(
        "typescript",
        (("typescript-language-server", ("--stdio",)),),
        tuple(TYPESCRIPT),
        ("tsconfig.json", "jsconfig.json", "package.json", ".git"),
    ),
    Builtin("gopls", (("gopls", ()),), ("*.go",), ("go.work", "go.mod", ".git")),
    Builtin(
        "rust-analyzer",
        (("rust-analyzer", ()),),
        ("*.rs",),
        ("Cargo.toml", ".git"),
        initialization_options={
            "cargo": {"buildScripts": {"enable": False}},
            "procMacro": {"enable": False},
            "checkOnSave": False,
        },
    ),
    Builtin(
        "clangd",
        (("clangd", ("--background-index=false",)),),
        tuple(C_FAMILY),
        ("compile_commands.json", "compile_flags.txt", ".clangd", ".git"),
    ),
)
