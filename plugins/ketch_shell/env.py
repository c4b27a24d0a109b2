"""The environment a command the model proposed runs with: an allow-list.

Only the variables builds and tools need are passed on (:data:`ALLOWED`,
:data:`ALLOWED_PATTERNS`): where programs are, who and where you are, language and
time zone, temporary directory, and the usual toolchain homes and build flags. Anything
else in ketch's environment -- ``DATABASE_URL``, ``MYSQL_PWD``, an API key, a session
cookie, whatever a name does not give away -- does not reach the command, so
``printenv`` cannot hand it to the model. An allowed variable whose value carries
credentials in a URL (``HTTP_PROXY=http://user:pass@proxy:3128``, a ``GOPROXY`` or
index URL with a token) is left out too. Variables that silently change what a
"read-only" program does (``BASH_ENV``, ``LD_PRELOAD``, ``RIPGREP_CONFIG_PATH``...) are
never passed: the policy judges commands by their text, and these would make it lie.

``[shell] env_allow = ["AWS_PROFILE", "MYAPP_*"]`` (names or globs) in the *user*
config adds variables, passed as they are (``env_passthrough`` is the older name of
the same list). A workspace's ``.ketch/config.toml`` cannot add any until the
workspace is trusted (the ``[shell]`` table is not read from it before).

Processes ketch starts that are not the model's commands -- user hooks, MCP servers,
permission-prompt commands, the person's own ``!command`` -- keep their own documented
environment (:mod:`ketch.childenv`: ketch's, without secret-looking names).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

ALLOWED = frozenset(
    {
        # who, where, how
        "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR",
        "HOSTNAME", "COLUMNS", "LINES", "CI",
        "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME",
        "XDG_CONFIG_DIRS", "XDG_DATA_DIRS",
        # certificates (corporate roots)
        "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
        # proxies (left out when they carry user:password)
        "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
        "no_proxy", "all_proxy",
        # Python
        "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "CONDA_EXE", "MAMBA_ROOT_PREFIX",
        "PYENV_ROOT", "PYENV_VERSION", "PYTHONPATH", "PYTHONHOME", "PYTHONDONTWRITEBYTECODE",
        "PYTHONUNBUFFERED", "PYTHONIOENCODING", "PYTHONUTF8", "PIPX_HOME", "PIPX_BIN_DIR",
        "UV_CACHE_DIR", "UV_PYTHON", "PIP_CACHE_DIR",
        # JavaScript
        "NODE_PATH", "NVM_DIR", "NVM_BIN", "NVM_INC", "VOLTA_HOME", "PNPM_HOME", "BUN_INSTALL",
        "DENO_DIR",
        # Rust, Go
        "CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN", "CARGO_TARGET_DIR", "RUSTFLAGS",
        "GOPATH", "GOROOT", "GOBIN", "GOCACHE", "GOMODCACHE", "GOFLAGS", "GOPROXY",
        "GOPRIVATE", "GONOSUMDB", "GONOPROXY", "GOTOOLCHAIN", "CGO_ENABLED",
        # JVM, .NET, Ruby
        "JAVA_HOME", "MAVEN_HOME", "M2_HOME", "GRADLE_HOME", "GRADLE_USER_HOME", "SDKMAN_DIR",
        "DOTNET_ROOT", "DOTNET_CLI_TELEMETRY_OPTOUT", "GEM_HOME", "GEM_PATH", "RBENV_ROOT",
        "RBENV_VERSION", "ASDF_DIR", "ASDF_DATA_DIR",
        # C and C++
        "CC", "CXX", "CPP", "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "PKG_CONFIG_PATH",
        "LIBRARY_PATH", "LD_LIBRARY_PATH", "CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH",
        "MAKEFLAGS",
    }
)  # fmt: skip
ALLOWED_PATTERNS = ("LC_*",)
CHANGES_PROGRAMS = frozenset(
    {
        "BASH_ENV",
        "ENV",
        "LD_PRELOAD",
        "LD_AUDIT",
        "RIPGREP_CONFIG_PATH",
        "PROMPT_COMMAND",
        "GIT_EXTERNAL_DIFF",
        "CDPATH",  # steers every later `cd` (the analysis assumes it is unset)
    }
)
# No pager waits for a key, no git prompt for a password nobody can type, no colours.
FIXED = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "TERM": "dumb",
    "NO_COLOR": "1",
    # git status/diff refresh .git/index as they read; with this they only read, so the
    # policy can prove them read-only (the shell tool says so in its access).
    "GIT_OPTIONAL_LOCKS": "0",
}
# scheme://user:password@host, scheme://token@host
USERINFO = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/@\s]+@")


def _listed(name: str, patterns: Iterable[str]) -> bool:
    from ketch_policy_kit.globs import match_any_name

    return match_any_name(name, patterns)


def child_env(
    environ: Mapping[str, str], *, allow: Iterable[str] = (), cwd: str | None = None
) -> dict[str, str]:
    """The allow-listed part of ``environ``, plus ``allow`` (names or globs the person
    listed, passed as they are), plus the fixed settings and ``PWD``."""
    extra = [p for p in allow if isinstance(p, str) and p]
    env: dict[str, str] = {}
    for name, value in environ.items():
        if name in CHANGES_PROGRAMS or name.startswith(("DYLD_", "BASH_FUNC_")):
            continue  # never, whoever asks: they would redefine what the policy judged
        builds_need = name in ALLOWED or _listed(name, ALLOWED_PATTERNS)
        if _listed(name, extra) or (builds_need and not USERINFO.search(value)):
            env[name] = value
    env.update(FIXED)
    if cwd is not None:
        env["PWD"] = cwd
    return env


def removed(environ: Mapping[str, str], env: Mapping[str, str]) -> list[str]:
    return sorted(name for name in environ if name not in env)
