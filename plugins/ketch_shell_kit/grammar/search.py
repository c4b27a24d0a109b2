"""Searching and text tools: grep, rg, find, sed, awk, jq."""

from __future__ import annotations

from ketch_shell_kit.grammar.spec import Program, program

GREP_OPTIONS = (
    "-E,--extended-regexp -F,--fixed-strings -G,--basic-regexp -P,--perl-regexp -e,--regexp=pat{drop} -f,--file=read{drop} "
    "-i,-y,--ignore-case --no-ignore-case -w,--word-regexp -x,--line-regexp -z,--null-data -s,--no-messages -v,--invert-match "
    "-V,--version --help -m,--max-count=num -b,--byte-offset -n,--line-number --line-buffered -H,--with-filename -h,--no-filename "
    "--label=str -o,--only-matching -q,--quiet,--silent --binary-files=enum -a,--text -I -d,--directories=enum -D,--devices=enum "
    "-r,--recursive{tree} -R,--dereference-recursive{tree} --include=pat --exclude=pat --exclude-from=read --exclude-dir=pat "
    "-L,--files-without-match -l,--files-with-matches -c,--count -T,--initial-tab -Z,--null -B,--before-context=num "
    "-A,--after-context=num -C,--context=num --group-separator=str --no-group-separator --color[=enum] --colour[=enum] -U,--binary"
)

# ripgrep 13/14: every flag. rg searches directories recursively by default; its
# option parser takes no abbreviations.
RG_OPTIONS = (
    "-A,--after-context=num --auto-hybrid-regex --no-auto-hybrid-regex -B,--before-context=num --binary --no-binary "
    "--block-buffered --no-block-buffered -b,--byte-offset --no-byte-offset -s,--case-sensitive --color=enum --colors=str "
    "--column --no-column -C,--context=num --context-separator=str --no-context-separator -c,--count --count-matches --crlf "
    "--no-crlf --debug --trace --dfa-size-limit=size -E,--encoding=enum --no-encoding --engine=enum "
    "--field-context-separator=str --field-match-separator=str -f,--file=read{drop} --files{ops=vtree*} -l,--files-with-matches "
    "--files-without-match -F,--fixed-strings --no-fixed-strings -L,--follow{tree} --no-follow -g,--glob=pat --glob-case-insensitive "
    "--no-glob-case-insensitive -h,--help --heading --no-heading --hidden{tree} --no-hidden --iglob=pat -i,--ignore-case "
    "--ignore-file=read --ignore-file-case-insensitive --no-ignore-file-case-insensitive --include-zero --no-include-zero "
    "-v,--invert-match --no-invert-match --json --no-json --line-buffered --no-line-buffered -n,--line-number "
    "-N,--no-line-number -x,--line-regexp -M,--max-columns=num --max-columns-preview --no-max-columns-preview "
    "-m,--max-count=num --max-depth,-d=num --max-filesize=size --mmap --no-mmap -U,--multiline --no-multiline "
    "--multiline-dotall --no-multiline-dotall --no-config -I,--no-filename --no-ignore --ignore --no-ignore-dot --ignore-dot "
    "--no-ignore-exclude --ignore-exclude --no-ignore-files --ignore-files --no-ignore-global --ignore-global "
    "--no-ignore-messages --ignore-messages --no-ignore-parent --ignore-parent --no-ignore-vcs --ignore-vcs --no-messages "
    "--messages --no-pcre2-unicode --pcre2-unicode --no-require-git --require-git --no-unicode --unicode -0,--null "
    "--null-data --one-file-system --no-one-file-system -o,--only-matching --passthru,--passthrough --path-separator=str "
    "-P,--pcre2 --no-pcre2 --pcre2-version --pre=exec --no-pre --pre-glob=pat -p,--pretty -q,--quiet --regex-size-limit=size "
    "-e,--regexp=pat{drop} -r,--replace=str -z,--search-zip{exec} --no-search-zip -S,--smart-case --no-smart-case --sort=enum "
    "--sortr=enum --sort-files --no-sort-files --stats --no-stats -a,--text --no-text -j,--threads=num --trim --no-trim "
    "-t,--type=enum --type-list --type-add=str --type-clear=enum -T,--type-not=enum -u,--unrestricted{tree} -V,--version --vimgrep "
    "-H,--with-filename -w,--word-regexp --hostname-bin=exec --hyperlink-format=str --no-unrestricted "
    "--generate=enum --stop-on-nonmatch"
)

SEARCH: list[Program] = [
    program("grep", GREP_OPTIONS, "pat read*", numeric=True, default_operand="."),
    program("egrep", GREP_OPTIONS, "pat read*", numeric=True, default_operand=".", help_argv=()),
    program("fgrep", GREP_OPTIONS, "pat read*", numeric=True, default_operand=".", help_argv=()),
    program(
        "rg",
        RG_OPTIONS,
        "pat vtree*",
        abbreviations=False,
        default_operand=".",
        help_ignore=frozenset({"files-with-matches"}),
    ),
    program(
        "sed",
        "-n,--quiet,--silent --debug -e,--expression=sedscript{drop} -f,--file=code{drop} --follow-symlinks "
        "-i,--in-place[=str]{ops=sedscript_write*} -l,--line-length=num --posix -E,-r,--regexp-extended -s,--separate --sandbox "
        "-u,--unbuffered -z,--null-data -b,--binary --help --version",
        "sedscript read*",
        handler="sed",
    ),
    program(
        "awk",
        # mawk's and gawk's options together; -W (mawk) and the gawk ones that load code
        # or write files are not read-only.
        "-F,--field-separator=str -v,--assign=str -f,--file=code{drop} -e,--source=awkprog{drop} -E,--exec=code{drop} "
        "-i,--include=code -l,--load=code -W=unsafe -b,--characters-as-bytes -c,--traditional -C,--copyright "
        "-d,--dump-variables[=write] -D,--debug[=write] -g,--gen-pot -h,--usage -L,--lint[=enum] -M,--bignum -N,--use-lc-numeric "
        "-n,--non-decimal-data -o,--pretty-print[=write] -O,--optimize -p,--profile[=write] -P,--posix -r,--re-interval "
        "-s,--no-optimize -S,--sandbox -t,--lint-old -V,--version -I,--trace -k,--csv --help",
        "awkprog read*",
        handler="awk",
        help_argv=(),
    ),
    program(
        "jq",
        "-c,--compact-output -n,--null-input -e,--exit-status -s,--slurp -r,--raw-output -j,--join-output -a,--ascii-output "
        "-R,--raw-input -C,--color-output -M,--monochrome-output -S,--sort-keys --tab --indent=num --unbuffered --stream --seq "
        "-f,--from-file=code{drop} -L=unsafe --args{ops=jqfilter_str*} --jsonargs{ops=jqfilter_str*} -h,--help -V,--version "
        # Two values each (a name, then a value or a file): not read by getopt, so the
        # words after them cannot be placed; --slurpfile/--rawfile read a file.
        "--arg{unsafe} --argjson{unsafe} --slurpfile{hide} --rawfile{hide} --debug-dump-disasm --debug-trace",
        "jqfilter read*",
    ),
]
# Every spelling of awk reads the awk grammar (looked up by name: an index into the
# growing list once made gawk a twin of jq).
_AWK = next(p for p in SEARCH if p.name == "awk")
for name in ("mawk", "gawk", "nawk"):
    twin = program(name, "", "")
    twin.__dict__.update({k: v for k, v in _AWK.__dict__.items() if k != "name"})
    SEARCH.append(twin)

# find's expression: primary -> (argument types, tag). Tags: "exec" (-exec...;),
# "delete", "" (a test or a harmless action).
FIND_PRIMARIES: dict[str, tuple[tuple[str, ...], str]] = {
    **{
        p: (("pat",), "")
        for p in (
            "-name",
            "-iname",
            "-path",
            "-ipath",
            "-wholename",
            "-iwholename",
            "-regex",
            "-iregex",
            "-lname",
            "-ilname",
        )
    },
    **{
        p: (("str",), "")
        for p in (
            "-type",
            "-xtype",
            "-size",
            "-perm",
            "-user",
            "-group",
            "-uid",
            "-gid",
            "-links",
            "-inum",
            "-mtime",
            "-atime",
            "-ctime",
            "-mmin",
            "-amin",
            "-cmin",
            "-used",
            "-fstype",
            "-context",
            "-maxdepth",
            "-mindepth",
            "-regextype",
        )
    },
    **{p: (("list",), "") for p in ("-samefile", "-newer", "-anewer", "-cnewer", "-newerXY")},
    **{
        p: ((), "")
        for p in (
            "-empty",
            "-readable",
            "-writable",
            "-executable",
            "-nouser",
            "-nogroup",
            "-true",
            "-false",
            "-depth",
            "-d",
            "-mount",
            "-xdev",
            "-noleaf",
            "-ignore_readdir_race",
            "-noignore_readdir_race",
            "-daystart",
            "-follow",
            "-warn",
            "-nowarn",
            "-print",
            "-print0",
            "-ls",
            "-prune",
            "-quit",
            "--help",
            "--version",
            "-help",
            "-version",
        )
    },
    "-printf": (("fmt",), ""),
    "-files0-from": (("read",), ""),
    "-fprint": (("write",), ""),
    "-fprint0": (("write",), ""),
    "-fls": (("write",), ""),
    "-fprintf": (("write", "fmt"), ""),
    "-delete": ((), "delete"),
    **{p: ((), "exec") for p in ("-exec", "-execdir", "-ok", "-okdir")},
}

FIND = program("find", "", "", handler="find", help_argv=())
