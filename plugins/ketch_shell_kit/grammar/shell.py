"""Bash's builtins, the shells themselves, and the programs that run other programs.

Wrappers have a ``cmd`` operand: the words from there on are the command they run
(read in turn). They stop reading options at their first operand, as they do with
``getopt``'s ``+`` (``timeout 5 rm -rf x``: ``-rf`` is rm's).
"""

from __future__ import annotations

from ketch_shell_kit.grammar.spec import Program, program

H = "--help --version"

# Builtins: run by bash itself whatever PATH says.
BUILTIN_PROGRAMS: list[Program] = [
    program("echo", "", "", handler="echo", help_argv=()),
    program("printf", "-v=varname", "fmt? str*", permute=False, help_argv=()),
    program(":", "", "", handler="echo", help_argv=()),
    program("test", "", "", handler="test", help_argv=()),
    program("[", "", "", handler="test", help_argv=()),
    program("cd", "-L -P -e -@", "", handler="cd", help_argv=()),
    program("pushd", "-n", "", handler="cd", help_argv=()),
    program("popd", "-n", "", handler="cd", help_argv=()),
    program("dirs", "-c -l -p -v", "str*", numeric=True, help_argv=()),
    program("type", "-a -f -p -P -t", "str*", help_argv=()),
    program("command", "-p -v -V", "cmd", permute=False, handler="command", help_argv=()),
    program("builtin", "", "cmd", permute=False, help_argv=()),
    program("exec", "-a=str -c -l", "cmd?", permute=False, help_argv=()),
    program("eval", "", "", handler="eval", help_argv=()),
    program(
        "read",
        "-a=varname -d=str -e -E -i=str -n=num -N=num -p=str -r -s -t=num -u=num",
        "varname*",
        permute=False,
        help_argv=(),
    ),
    program("getopts", "", "str varname str*", permute=False, help_argv=()),
    program("wait", "-f -n -p=varname", "str*", permute=False, help_argv=()),
    program("jobs", "-l -n -p -r -s -x{opaque}", "str*", permute=False, help_argv=()),
    program("shift", "", "num?", help_argv=()),
    program("break", "", "num?", help_argv=()),
    program("continue", "", "num?", help_argv=()),
    program("return", "", "num?", help_argv=()),
    program("exit", "", "num?", help_argv=()),
    program("logout", "", "num?", help_argv=()),
    program("times", "", "", help_argv=()),
    program("help", "-d -m -s", "str*", help_argv=()),
    program("caller", "", "num?", help_argv=()),
    program(
        "umask",
        "-p -S",
        "str?",
        reason="umask changes the permissions of files created later",
        help_argv=(),
    ),
    program("set", "", "", handler="set", help_argv=()),
    program("ulimit", "", "", reason="ulimit changes resource limits", help_argv=()),
    program("kill", "", "", reason="kill sends signals to processes", help_argv=()),
    program("disown", "", "", reason="disown detaches jobs", help_argv=()),
    program("suspend", "", "", reason="suspend stops the shell", help_argv=()),
    program("fg", "", "", reason="fg resumes jobs", help_argv=()),
    program("bg", "", "", reason="bg resumes jobs", help_argv=()),
    program(
        "history",
        "",
        "",
        reason="history reads or writes the history file",
        help_argv=(),
        steers=True,
    ),
    program(
        "mapfile",
        "-d=str -n=num -O=num -s=num -t -u=num -C=exec{opaque} -c=num",
        "varname?",
        permute=False,
        help_argv=(),
    ),
    program(
        "readarray",
        "-d=str -n=num -O=num -s=num -t -u=num -C=exec{opaque} -c=num",
        "varname?",
        permute=False,
        help_argv=(),
    ),
    program(
        "compgen",
        "",
        "",
        reason="compgen can run functions and commands",
        steers=True,
        help_argv=(),
    ),
    # These change how later words and commands are read: never proven, and the guards
    # cannot see what a later command then means.
    *[
        program(n, "", "", steers=True, help_argv=())
        for n in (
            "alias",
            "unalias",
            "shopt",
            "hash",
            "enable",
            "complete",
            "compopt",
            "bind",
            "fc",
        )
    ],
]
BUILTIN_NAMES = frozenset(p.name for p in BUILTIN_PROGRAMS) | {
    "declare", "typeset", "local", "export", "readonly", "unset", "let", "source", ".", "trap", "coproc", "time",
    "true", "false", "pwd", "kill", "printf", "echo", "test",
}  # fmt: skip

SHELLS: list[Program] = [
    program(
        name,
        "--rcfile=read --init-file=read --norc --noprofile --login --posix --verbose --restricted --noediting --debugger --dump-strings --dump-po-strings --pretty-print "
        + H,
        "",
        handler="shell",
        help_argv=(),
    )
    for name in (
        "bash",
        "sh",
        "dash",
        "zsh",
        "ksh",
        "mksh",
        "ash",
        "fish",
        "csh",
        "tcsh",
        "pwsh",
        "busybox",
    )
]

WRAPPERS: list[Program] = [
    program(
        "env",
        "-i,--ignore-environment -0,--null -u,--unset=str -C,--chdir=cwd -S,--split-string=str{hide} --block-signal[=sig] "
        "--default-signal[=sig] --ignore-signal[=sig] --list-signal-handling -v,--debug -a,--argv0=str "
        + H,
        "env* cmd?",
        permute=False,
    ),
    program(
        "timeout",
        "--preserve-status --foreground -k,--kill-after=time -s,--signal=sig -v,--verbose " + H,
        "time cmd",
        permute=False,
    ),
    program("nice", "-n,--adjustment=num " + H, "cmd?", permute=False, numeric=True),
    program("nohup", H, "cmd", permute=False),
    program("stdbuf", "-i,--input=str -o,--output=str -e,--error=str " + H, "cmd", permute=False),
    program(
        "ionice",
        "-c,--class=str -n,--classdata=num -p,--pid=num{unsafe} -P,--pgid=num{unsafe} -t,--ignore -u,--uid=num{unsafe} -h,--help -V,--version",
        "cmd?",
        permute=False,
    ),
    program("setsid", "-c,--ctty -f,--fork -w,--wait -h,--help -V,--version", "cmd", permute=False),
    program(
        "flock",
        "-s,--shared -x,-e,--exclusive -u,--unlock -n,--nb,--nonblock -w,--wait,--timeout=num -E,--conflict-exit-code=num "
        "-o,--close -c,--command=script -F,--no-fork --verbose -h,--help -V,--version",
        "write cmd?",
        permute=False,
    ),
    program(
        "chrt",
        "-b,--batch -d,--deadline -f,--fifo -i,--idle -o,--other -r,--rr -R,--reset-on-fork -T,--sched-runtime=num "
        "-P,--sched-period=num -D,--sched-deadline=num -a,--all-tasks -m,--max -p,--pid{unsafe} -v,--verbose -h,--help -V,--version",
        "num? cmd?",
        permute=False,
    ),
    program(
        "taskset",
        "-a,--all-tasks -p,--pid{unsafe} -c,--cpu-list -h,--help -V,--version",
        "str cmd?",
        permute=False,
    ),
    program(
        "xargs",
        "-0,--null -a,--arg-file=read -d,--delimiter=str -E=str -e,--eof[=str] -I=str{replace} -i,--replace[=str]{replace} "
        "-L,--max-lines=num -l[=num] -n,--max-args=num -o,--open-tty -P,--max-procs=num -p,--interactive "
        "--process-slot-var=str{unsafe} -r,--no-run-if-empty -s,--max-chars=num --show-limits -t,--verbose -x,--exit "
        + H,
        "cmd?",
        permute=False,
    ),
    # ``time`` first in a command is bash's keyword (``-p`` only; the next word is the
    # command, whatever it looks like); as a path, or run by a wrapper, it is GNU time.
    program("time", "", "", handler="time", help_argv=()),
    program(
        "gnu-time",
        "-p -o,--output=write -a,--append -f,--format=fmt -v,--verbose -q,--quiet " + H,
        "cmd?",
        permute=False,
        help_argv=(),
    ),
    program(
        "watch",
        "-b,--beep -c,--color -C,--no-color -d,--differences[=enum] -e,--errexit -g,--chgexit -n,--interval=num -p,--precise -r,--no-rerun -t,--no-title -w,--no-wrap -x,--exec -q,--equexit=num -h,--help -v,--version",
        "",
        permute=False,
        handler="watch",
        help_argv=(),
    ),
    # Programs that run a command as another user, with other credentials, or in
    # another root or namespace: never proven; the command they run is read for the
    # guards and the deny rules.
    program(
        "sudo",
        "-A,--askpass -b,--background -B,--bell -C,--close-from=num -D,--chdir=cwd -E,--preserve-env[=str] -e,--edit{write} -g,--group=str -H,--set-home -h,--host=str -i,--login{hide} -K,--remove-timestamp -k,--reset-timestamp -l,--list -N,--no-update -n,--non-interactive -P,--preserve-groups -p,--prompt=str -R,--chroot=str -r,--role=str -S,--stdin -s,--shell{hide} -T,--command-timeout=str -t,--type=str -U,--other-user=str -u,--user=str -V,--version -v,--validate --help",
        "env* cmd?",
        permute=False,
        privileged=True,
        help_argv=(),
    ),
    program(
        "doas",
        "-a=str -C=read -L -n -s{hide} -u=str",
        "cmd?",
        permute=False,
        privileged=True,
        help_argv=(),
    ),
    program(
        "pkexec",
        "--user=str --disable-internal-agent --keep-cwd --help --version",
        "cmd?",
        permute=False,
        privileged=True,
        help_argv=(),
    ),
    program(
        "run0",
        "--user=str -u=str --group=str -g=str --nice=num --chdir=cwd -D=cwd --setenv=str --unit=str --property=str --description=str --slice=str --slice-inherit --background=str --machine=str --no-ask-password -h,--help --version",
        "cmd?",
        permute=False,
        privileged=True,
        help_argv=(),
    ),
    program(
        "su",
        "-c,--command=script -f,--fast -g,--group=str -G,--supp-group=str -l,--login -m,-p,--preserve-environment -P,--pty -s,--shell=exec -w,--whitelist-environment=str -h,--help -V,--version",
        "str? str*",
        privileged=True,
        handler="su",
        help_argv=(),
    ),
    program(
        "runuser",
        "-c,--command=script -f,--fast -g,--group=str -G,--supp-group=str -l,--login -m,-p,--preserve-environment -P,--pty -s,--shell=exec -u,--user=str -w,--whitelist-environment=str -h,--help -V,--version",
        "str? str*",
        privileged=True,
        handler="su",
        help_argv=(),
    ),
    program("sg", "-c=script", "str? str*", privileged=True, handler="su", help_argv=()),
    program(
        "setpriv",
        "-d,--dump --clear-groups --groups=str --init-groups --inh-caps=str --ambient-caps=str --keep-groups --nnp,--no-new-privs --bounding-set=str --regid=str --reuid=str --rgid=str --ruid=str --securebits=str --pdeathsig=sig --selinux-label=str --apparmor-profile=str --landlock-access=str --landlock-rule=str --reset-env -h,--help -V,--version",
        "cmd?",
        permute=False,
        privileged=True,
        help_argv=(),
    ),
    program(
        "chroot",
        "--groups=str --userspec=str --skip-chdir " + H,
        "list cmd?",
        permute=False,
        privileged=True,
        help_argv=(),
    ),
    program(
        "nsenter",
        "-a,--all -t,--target=num -m,--mount[=list] -u,--uts[=list] -i,--ipc[=list] -n,--net[=list] -p,--pid[=list] -C,--cgroup[=list] -U,--user[=list] -T,--time[=list] -S,--setuid=num -G,--setgid=str --preserve-credentials -r,--root[=list] -w,--wd[=list] -W,--wdns=list -e,--env -F,--no-fork -Z,--follow-context -h,--help -V,--version",
        "cmd?",
        permute=False,
        privileged=True,
        help_argv=(),
    ),
    program(
        "unshare",
        "-m,--mount[=list] -u,--uts[=list] -i,--ipc[=list] -n,--net[=list] -p,--pid[=list] -U,--user[=list] -C,--cgroup[=list] -T,--time[=list] -f,--fork --kill-child[=sig] --mount-proc[=list] --map-user=str --map-users=str --map-group=str --map-groups=str --map-auto -r,--map-root-user -c,--map-current-user --propagation=enum --setgroups=enum --keep-caps -R,--root=list -w,--wd=list -S,--setuid=num -G,--setgid=num --monotonic=num --boottime=num -h,--help -V,--version",
        "cmd?",
        permute=False,
        privileged=True,
        help_argv=(),
    ),
    program(
        "capsh",
        "",
        "",
        privileged=True,
        reason="capsh runs a shell with other capabilities",
        steers=True,
        help_argv=(),
    ),
    program(
        "strace",
        "-o,--output=write -p,--attach=num{unsafe} -e=str -f,--follow-forks -ff,--output-separately -c,--summary-only -C,--summary -k -q,--quiet -qq -t -tt -ttt -T -v -x -xx -y -yy -s,--string-limit=num -a,--columns=num -u,--user=str{privileged} -E,--env=str -b,--detach-on=str -I,--interruptible=num -D,--daemonize -X,--const-print-style=enum -h,--help -V,--version",
        "cmd?",
        permute=False,
        reason="strace traces another program",
        help_argv=(),
    ),
    program(
        "ltrace",
        "-o,--output=write -p=num{unsafe} -e=str -f -c -C -S -t -tt -ttt -T -n=num -s=num -u=str{privileged} -h,--help -V,--version",
        "cmd?",
        permute=False,
        reason="ltrace traces another program",
        help_argv=(),
    ),
    program(
        "script",
        "-a,--append -c,--command=script -E,--echo=enum -e,--return -f,--flush -B,--log-io=write -I,--log-in=write -O,--log-out=write -T,--log-timing=write -m,--logging-format=enum -o,--output-limit=size -q,--quiet -t,--timing[=write] -h,--help -V,--version",
        "write?",
        reason="script records a session into a file",
        handler="script",
        help_argv=(),
    ),
]
