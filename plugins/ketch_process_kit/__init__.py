"""ketch_process_kit: running a short-lived helper program and reading its answer (a library).

Hooks and ``--permission-prompt-command`` both start a program, hand it JSON on stdin,
and read its answer from stdout. :func:`ketch_process_kit.oneshot.run_once` is the one
way they do it: the answer is read as soon as the program exits (a background child
that keeps stdout open does not hold it up), the program's whole process group ends
with it, and nothing is left for the event loop to trip over at exit. It registers
nothing, so either plugin can be disabled alone.

``childenv``: the environment every child process ketch starts on its own or the
person's behalf gets: ketch's own minus secret-looking variables.
"""
