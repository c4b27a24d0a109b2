"""Programs that read files or print facts (GNU coreutils, util-linux, diffutils...),
and the file writers the guards must see through (rm, cp, mv...).

Every option each program accepts is listed (the grammar test compares these lists
with the program's own ``--help`` on the test machine), with what its value is.
"""

from __future__ import annotations

from ketch_shell_kit.grammar.spec import Program, program

H = "--help --version"
SUMS = (
    "-b,--binary -c,--check --tag -t,--text -z,--zero --ignore-missing --quiet --status --strict -w,--warn "
    + H
)

READERS: list[Program] = [
    program(
        "cat",
        "-A,--show-all -b,--number-nonblank -e -E,--show-ends -n,--number -s,--squeeze-blank -t -T,--show-tabs -u -v,--show-nonprinting "
        + H,
        "read*",
    ),
    program("tac", "-b,--before -r,--regex -s,--separator=str " + H, "read*"),
    program(
        "nl",
        "-b,--body-numbering=str -d,--section-delimiter=str -f,--footer-numbering=str -h,--header-numbering=str -i,--line-increment=num -l,--join-blank-lines=num -n,--number-format=str -p,--no-renumber -s,--number-separator=str -v,--starting-line-number=num -w,--number-width=num "
        + H,
        "read*",
    ),
    program(
        "head",
        "-c,--bytes=num -n,--lines=num -q,--quiet,--silent -v,--verbose -z,--zero-terminated " + H,
        "read*",
        numeric=True,
    ),
    program(
        "tail",
        "-c,--bytes=num -f,--follow[=enum] -F --max-unchanged-stats=num --pid=num -n,--lines=num -q,--quiet,--silent --retry -s,--sleep-interval=num -v,--verbose -z,--zero-terminated "
        + H,
        "read*",
        numeric=True,
    ),
    program(
        "wc",
        "-c,--bytes -m,--chars -l,--lines --files0-from=read -L,--max-line-length -w,--words --total=enum "
        + H,
        "read*",
    ),
    program(
        "cut",
        "-b,--bytes=str -c,--characters=str -d,--delimiter=str -f,--fields=str -n --complement -s,--only-delimited --output-delimiter=str -z,--zero-terminated "
        + H,
        "read*",
    ),
    program("paste", "-d,--delimiters=str -s,--serial -z,--zero-terminated " + H, "read*"),
    program("fold", "-b,--bytes -s,--spaces -w,--width=num " + H, "read*"),
    program(
        "fmt",
        "-c,--crown-margin -p,--prefix=str -s,--split-only -t,--tagged-paragraph -u,--uniform-spacing -w,--width=num -g,--goal=num "
        + H,
        "read*",
        numeric=True,
    ),
    program(
        "column",
        "-t,--table -n,--table-name=str -O,--table-order=str -N,--table-columns=str -l,--table-columns-limit=num -E,--table-noextreme=str -d,--table-noheadings -e,--table-header-repeat -H,--table-hide=str -R,--table-right=str -T,--table-truncate=str -W,--table-wrap=str -L,--keep-empty-lines -J,--json -r,--tree=str -i,--tree-id=str -p,--tree-parent=str -c,--output-width=num -o,--output-separator=str -s,--separator=str -x,--fillrows -h,--help -V,--version",
        "read*",
    ),
    program(
        "comm",
        "-1 -2 -3 --check-order --nocheck-order --output-delimiter=str --total -z,--zero-terminated "
        + H,
        "read read",
    ),
    program(
        "cmp",
        "-b,--print-bytes -i,--ignore-initial=str -l,--verbose -n,--bytes=num -s,--quiet,--silent --help -v,--version",
        "read read? num? num?",
    ),
    program(
        "diff",
        "--normal -q,--brief -s,--report-identical-files -c -C,--context[=num] -u -U,--unified[=num] -e,--ed -n,--rcs -y,--side-by-side "
        "-W,--width=num --left-column --suppress-common-lines -p,--show-c-function -F,--show-function-line=pat --label=str -t,--expand-tabs "
        "-T,--initial-tab --tabsize=num --suppress-blank-empty -l,--paginate -r,--recursive{tree} --no-dereference -N,--new-file "
        "--unidirectional-new-file --ignore-file-name-case --no-ignore-file-name-case -x,--exclude=pat -X,--exclude-from=read "
        "-S,--starting-file=str --from-file=read --to-file=read -i,--ignore-case -E,--ignore-tab-expansion -Z,--ignore-trailing-space "
        "-b,--ignore-space-change -w,--ignore-all-space -B,--ignore-blank-lines -I,--ignore-matching-lines=pat -a,--text "
        "--strip-trailing-cr -D,--ifdef=str --old-group-format=fmt --new-group-format=fmt --unchanged-group-format=fmt "
        "--changed-group-format=fmt --line-format=fmt --old-line-format=fmt --new-line-format=fmt --unchanged-line-format=fmt "
        "-d,--minimal --horizon-lines=num --speed-large-files --color[=enum] --palette=str --help -v,--version",
        "read*",
        help_ignore=frozenset({"GTYPE-group-format", "LTYPE-line-format"}),
    ),
    program(
        "stat",
        "-L,--dereference -f,--file-system --cached=enum -c,--format=fmt --printf=fmt -t,--terse "
        + H,
        "list*",
    ),
    program(
        "du",
        "-0,--null -a,--all --apparent-size -B,--block-size=size -b,--bytes -c,--total -D,--dereference-args -d,--max-depth=num "
        "--files0-from=read -H -h,--human-readable --inodes -k -L,--dereference -l,--count-links -m -P,--no-dereference "
        "-S,--separate-dirs --si -s,--summarize -t,--threshold=size --time[=enum] --time-style=str -X,--exclude-from=read "
        "--exclude=pat -x,--one-file-system " + H,
        "list*",
    ),
    program(
        "df",
        "-a,--all -B,--block-size=size -h,--human-readable -H,--si -i,--inodes -k -l,--local --no-sync --output[=str] -P,--portability --sync --total -t,--type=str -T,--print-type -x,--exclude-type=str -v "
        + H,
        "list*",
    ),
    program(
        "realpath",
        "-e,--canonicalize-existing -m,--canonicalize-missing -L,--logical -P,--physical -q,--quiet --relative-to=list --relative-base=list -s,--strip,--no-symlinks -z,--zero "
        + H,
        "list*",
    ),
    program(
        "readlink",
        "-f,--canonicalize -e,--canonicalize-existing -m,--canonicalize-missing -n,--no-newline -q,--quiet -s,--silent -v,--verbose -z,--zero "
        + H,
        "list*",
    ),
    *[
        program(name, SUMS, "read*")
        for name in ("md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum")
    ],
    program("b2sum", "-l,--length=num " + SUMS, "read*"),
    program(
        "cksum",
        "-a,--algorithm=enum -b,--base64 -c,--check -l,--length=num --raw --tag --untagged -z,--zero --ignore-missing --quiet --status --strict -w,--warn --debug "
        + H,
        "read*",
    ),
    program("sum", "-r -s,--sysv " + H, "read*"),
    program(
        "od",
        "-A,--address-radix=enum --endian=enum -j,--skip-bytes=num -N,--read-bytes=num -S,--strings[=num] -t,--format=fmt "
        "-v,--output-duplicates -w,--width[=num] --traditional -a -b -c -d -f -i -l -o -s -x " + H,
        "read*",
    ),
    program(
        "hexdump",
        "-b,--one-byte-octal -c,--one-byte-char -C,--canonical -d,--two-bytes-decimal -o,--two-bytes-octal -x,--two-bytes-hex -L,--color[=enum] -e,--format=fmt -f,--format-file=read -n,--length=num -s,--skip=num -v,--no-squeezing -h,--help -V,--version",
        "read*",
    ),
    program(
        "strings",
        "-a,--all -d,--data -f,--print-file-name -n,--bytes=num -t,--radix=enum -w,--include-all-whitespace -o -T,--target=str -e,--encoding=enum -U,--unicode=enum -s,--output-separator=str -h,--help -v,-V,--version",
        "read*",
        numeric=True,
    ),
    program("expand", "-i,--initial -t,--tabs=str " + H, "read*", numeric=True),
    program("unexpand", "-a,--all --first-only -t,--tabs=str " + H, "read*", numeric=True),
    program(
        "join",
        "-a=enum -e=str -i,--ignore-case -j=num -o=str -t=str -v=enum -1=num -2=num --check-order --nocheck-order --header -z,--zero-terminated "
        + H,
        "read read",
    ),
    program("tsort", "-w " + H, "read?"),
    program(
        "shuf",
        "-e,--echo{ops=str*} -i,--input-range=str{ops=} -n,--head-count=num -o,--output=write --random-source=read -r,--repeat -z,--zero-terminated "
        + H,
        "read?",
    ),
    program(
        "sort",
        "-b,--ignore-leading-blanks -d,--dictionary-order -f,--ignore-case -g,--general-numeric-sort -i,--ignore-nonprinting "
        "-M,--month-sort -h,--human-numeric-sort -n,--numeric-sort -R,--random-sort --random-source=read -r,--reverse --sort=enum "
        "-V,--version-sort --batch-size=num -c -C,--check[=enum] --compress-program=exec --debug --files0-from=read -k,--key=str "
        "-m,--merge -o,--output=write -s,--stable -S,--buffer-size=size -t,--field-separator=str -T,--temporary-directory=write "
        "--parallel=num -u,--unique -z,--zero-terminated " + H,
        "read*",
    ),
    program(
        "uniq",
        "-c,--count -d,--repeated -D --all-repeated[=enum] -f,--skip-fields=num --group[=enum] -i,--ignore-case -s,--skip-chars=num -u,--unique -z,--zero-terminated -w,--check-chars=num "
        + H,
        "read? write?",
        numeric=True,
    ),
    program(
        "tr", "-c,-C,--complement -d,--delete -s,--squeeze-repeats -t,--truncate-set1 " + H, "str*"
    ),
    program("basename", "-a,--multiple -s,--suffix=str -z,--zero " + H, "str*"),
    program("dirname", "-z,--zero " + H, "str*"),
    program("seq", "-f,--format=fmt -s,--separator=str -w,--equal-width " + H, "str*"),
    program("whoami", H),
    program(
        "id",
        "-a -Z,--context -g,--group -G,--groups -n,--name -r,--real -u,--user -z,--zero " + H,
        "str*",
    ),
    program("groups", H, "str*"),
    program(
        "uname",
        "-a,--all -s,--kernel-name -n,--nodename -r,--kernel-release -v,--kernel-version -m,--machine -p,--processor -i,--hardware-platform -o,--operating-system "
        + H,
    ),
    program("nproc", "--all --ignore=num " + H),
    program("uptime", "-p,--pretty -h,--help -s,--since -V,--version"),
    program("arch", H),
    program("tty", "-s,--silent,--quiet " + H),
    program(
        "locale",
        "-a,--all-locales -m,--charmaps -c,--category-name -k,--keyword-name -v,--verbose --help --usage -V,--version",
        "str*",
    ),
    program("printenv", "-0,--null " + H, "str*"),
    program("sleep", H, "str*"),
    program("pwd", "-L,--logical -P,--physical " + H),
    program(
        "numfmt",
        "--debug -d,--delimiter=str --field=str --format=fmt --from=enum --from-unit=num --grouping --header[=num] --invalid=enum --padding=num --round=enum --suffix=str --to=enum --to-unit=num -z,--zero-terminated "
        + H,
        "str*",
    ),
    program("getconf", "-a -v=str", "str*", help_argv=()),
    program("factor", "-h,--exponents " + H, "str*"),
    program("expr", H, "str*"),
    program("true", "", "", handler="echo", help_argv=()),
    program("false", "", "", handler="echo", help_argv=()),
    program("which", "-a -s", "str*", help_argv=()),
    program("rev", "-0,--zero -h,--help -V,--version", "read*"),
    program(
        "pr",
        "--columns=num -a,--across -c,--show-control-chars -d,--double-space -D,--date-format=fmt -e,--expand-tabs[=str] "
        "-F,-f,--form-feed -h,--header=str -i,--output-tabs[=str] -J,--join-lines -l,--length=num -m,--merge -n,--number-lines[=str] "
        "-N,--first-line-number=num -o,--indent=num -r,--no-file-warnings -s,--separator[=str] -S,--sep-string[=str] -t,--omit-header "
        "-T,--omit-pagination -v,--show-nonprinting -w,--width=num -W,--page-width=num " + H,
        "read*",
        numeric=True,
    ),
    program(
        "ls",
        "-a,--all -A,--almost-all --author -b,--escape --block-size=size -B,--ignore-backups -c -C --color[=enum] -d,--directory "
        "-D,--dired -f -F,--classify[=enum] --file-type --format=enum --full-time -g --group-directories-first -G,--no-group "
        "-h,--human-readable --si -H,--dereference-command-line --dereference-command-line-symlink-to-dir --hide=pat "
        "--hyperlink[=enum] --indicator-style=enum -i,--inode -I,--ignore=pat -k,--kibibytes -l -L,--dereference -m "
        "-n,--numeric-uid-gid -N,--literal -o -p -q,--hide-control-chars --show-control-chars -Q,--quote-name --quoting-style=enum "
        "-r,--reverse -R,--recursive -s,--size -S --sort=enum --time=enum --time-style=str -t -T,--tabsize=num -u -U -v -w,--width=num "
        "-x -X -Z,--context --zero -1 " + H,
        "list*",
    ),
    program(
        "date",
        "-d,--date=str --debug -f,--file=read -I,--iso-8601[=enum] --resolution -R,--rfc-email --rfc-3339=enum -r,--reference=list -s,--set=str{unsafe} -u,--utc,--universal "
        + H,
        "str?",
    ),
    program(
        "file",
        "--help -v,--version -m,--magic-file=read -z,--uncompress -Z,--uncompress-noreport -b,--brief -c,--checking-printout "
        "-e,--exclude=str --exclude-quiet=str -f,--files-from=read -F,--separator=str -i,--mime --mime-type --mime-encoding --apple "
        "--extension -k,--keep-going -l,--list -L,--dereference -h,--no-dereference -n,--no-buffer -N,--no-pad -0,--print0 "
        "-p,--preserve-date -P,--parameter=str -r,--raw -s,--special-files -S,--no-sandbox -C,--compile{write} -d,--debug",
        "list*",
    ),
    program("base64", "-d,--decode -i,--ignore-garbage -w,--wrap=num " + H, "read?"),
    program("base32", "-d,--decode -i,--ignore-garbage -w,--wrap=num " + H, "read?"),
    program(
        "xxd",
        "-a -autoskip -b -bits -C -capitalize -c=num -cols=num -E -EBCDIC -e -g=num -groupsize=num -h -help -i -include -l=num -len=num -n=str -name=str -o=num -offset=num -ps -postscript -plain -p -r{ops=read?_write?} -revert{ops=read?_write?} -d -s=str -seek=str -u -uppercase -v -version -R=enum",
        "read? write?",
        single_dash_long=True,
        help_argv=("xxd", "-h"),
    ),
    program(
        "sdiff",
        "-o,--output=write -i,--ignore-case -E,--ignore-tab-expansion -Z,--ignore-trailing-space -b,--ignore-space-change -W,--ignore-all-space -B,--ignore-blank-lines -I,--ignore-matching-lines=pat --strip-trailing-cr -a,--text -w,--width=num -l,--left-column -s,--suppress-common-lines -t,--expand-tabs --tabsize=num -d,--minimal -H,--speed-large-files --diff-program=exec --help -v,--version",
        "read read",
    ),
    program(
        "diff3",
        "-A,--show-all -e,--ed -E,--show-overlap -3,--easy-only -x,--overlap-only -X -i -m,--merge -a,--text --strip-trailing-cr -T,--initial-tab --diff-program=exec -L,--label=str --help -v,--version",
        "read read read",
    ),
    program(
        "tree",
        "-a -d -l -f -x -L=num -R -P=pat -I=pat --gitignore --gitfile=read --ignore-case --matchdirs --metafirst --prune --info --infofile=read --noreport --charset=str --filelimit=num -o=write -q -N -Q -p -u -g -s -h --si --du -D --timefmt=fmt -F --inodes --device -v -t -c -U -r --dirsfirst --filesfirst --sort=enum -i -A -S -n -C -X -J -H=str -T=str --nolinks --hintro=read --houtro=read --fromfile{unsafe} --fromtabfile{unsafe} --fflinks --help --version",
        "list*",
    ),
]

# Letters of BSD-style ``ps`` (``ps aux``); ``e`` (environments) is deliberately absent.
PS_BSD_LETTERS = frozenset("auxwfjlsvmrTUcHhnSXZOgG")

PS = program(
    "ps",
    "-A -a -d -e -N,--deselect -C=str -G,--Group=str -g,--group=str -p,--pid=str --ppid=str -q,--quick-pid=str -s,--sid=str "
    "-t,--tty=str -U,--User=str -u,--user=str -c -f -F -j -l -M -O=fmt -o,--format=fmt -y -Z,--context -H --forest -w -L -m -T "
    "--cols,--columns,--width=num --cumulative --headers --no-headers --lines,--rows=num --signames --sort=str --help[=enum] -V,--version",
    "",
    handler="ps",
    help_argv=("ps", "--help", "all"),
)

# Writers: never read-only, but their targets are paths the guards check.
WRITERS: list[Program] = [
    program(
        "rm",
        "-f,--force -i -I --interactive[=enum] --one-file-system --no-preserve-root --preserve-root[=enum] -r,-R,--recursive -d,--dir -v,--verbose "
        + H,
        "write*",
        reason="rm deletes files",
    ),
    program(
        "rmdir",
        "--ignore-fail-on-non-empty -p,--parents -v,--verbose " + H,
        "write*",
        reason="rmdir removes directories",
    ),
    program("unlink", H, "write", reason="unlink removes a file"),
    program(
        "shred",
        "-f,--force -n,--iterations=num --random-source=read -s,--size=size -u --remove[=enum] -v,--verbose -x,--exact -z,--zero "
        + H,
        "write*",
        reason="shred destroys files",
    ),
    program(
        "truncate",
        "-c,--no-create -o,--io-blocks -r,--reference=list -s,--size=size " + H,
        "write*",
        reason="truncate changes file sizes",
    ),
    program(
        "touch",
        "-a -c,--no-create -d,--date=str -f -h,--no-dereference -m -r,--reference=list -t=str --time=enum "
        + H,
        "write*",
        reason="touch creates or changes files",
    ),
    program(
        "mkdir",
        "-m,--mode=str -p,--parents -v,--verbose -Z --context[=str] " + H,
        "write*",
        reason="mkdir creates directories",
    ),
    program(
        "mkfifo", "-m,--mode=str -Z --context[=str] " + H, "write*", reason="mkfifo creates files"
    ),
    program(
        "mknod", "-m,--mode=str -Z --context[=str] " + H, "write str*", reason="mknod creates files"
    ),
    program(
        "mv",
        "--backup[=enum] -b --debug --exchange -f,--force -i,--interactive -n,--no-clobber --no-copy --strip-trailing-slashes -S,--suffix=str -t,--target-directory=write{ops=move+} -T,--no-target-directory --update[=enum] -u -v,--verbose -Z,--context "
        + H,
        "move+ write",
        reason="mv moves files",
    ),
    program(
        "cp",
        "-a,--archive --attributes-only --backup[=enum] -b --copy-contents -d --debug -f,--force -i,--interactive -H -l,--link{link} "
        "-L,--dereference -n,--no-clobber -P,--no-dereference -p --preserve[=str] --no-preserve=str --parents -R,-r,--recursive{tree} "
        "--reflink[=enum] --remove-destination --sparse=enum --strip-trailing-slashes -s,--symbolic-link{link} -S,--suffix=str "
        "-t,--target-directory=write{ops=read+} -T,--no-target-directory --update[=enum] -u -v,--verbose -x,--one-file-system "
        "-Z --context[=str] --keep-directory-symlink " + H,
        "read+ write",
        reason="cp writes files",
    ),
    program(
        "ln",
        "--backup[=enum] -b -d,-F,--directory -f,--force -i,--interactive -L,--logical -n,--no-dereference -P,--physical -r,--relative -s,--symbolic -S,--suffix=str -t,--target-directory=write{ops=link+} -T,--no-target-directory -v,--verbose "
        + H,
        "link+ write",
        reason="ln makes links",
    ),
    program("link", H, "link write", reason="link makes a hard link"),
    program(
        "install",
        "--backup[=enum] -b -c -C,--compare -d,--directory{ops=write*} -D --debug -g,--group=str -m,--mode=str -o,--owner=str -p,--preserve-timestamps -s,--strip --strip-program=exec -S,--suffix=str -t,--target-directory=write{ops=read+} -T,--no-target-directory -v,--verbose --preserve-context -Z --context[=str] "
        + H,
        "read+ write",
        reason="install copies files",
    ),
    program(
        "chmod",
        "-c,--changes -f,--silent,--quiet -v,--verbose --dereference -h,--no-dereference --no-preserve-root --preserve-root --reference=list{ops=write+} -R,--recursive -H -L -P -r -w -x -X -s -t -u -g -o -a "
        + H,
        "str write+",
        reason="chmod changes permissions",
        numeric=True,
    ),
    program(
        "chown",
        "-c,--changes -f,--silent,--quiet -v,--verbose --dereference -h,--no-dereference --from=str --no-preserve-root --preserve-root --reference=list{ops=write+} -R,--recursive -H -L -P "
        + H,
        "str write+",
        reason="chown changes owners",
    ),
    program(
        "chgrp",
        "-c,--changes -f,--silent,--quiet -v,--verbose --dereference -h,--no-dereference --no-preserve-root --preserve-root --reference=list{ops=write+} -R,--recursive -H -L -P "
        + H,
        "str write+",
        reason="chgrp changes groups",
    ),
    program(
        "tee",
        "-a,--append -i,--ignore-interrupts -p --output-error[=enum] " + H,
        "write*",
        reason="tee writes files",
    ),
    program("dd", "", "", handler="dd", reason="dd copies data", help_argv=()),
]
