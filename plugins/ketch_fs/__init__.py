"""ketch_fs: the file tools — read_file, write_file, edit_file, list_dir, glob.

Every path is resolved against the workspace fixed at session start and declared to
the policy (outside the workspace, the guards ask); writes go through the
read-coverage guard and show a unified diff. See docs/tools.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ketch import hookimpl
from ketch.plugins import provides


@hookimpl
def ketch_session_start(session: Any) -> None:
    # What a killed write left behind last time is swept while the session starts.
    from ketch_fs.leftovers import sweep_in_background

    sweep_in_background(session.workspace)


@hookimpl
@provides("read_file", "write_file", "edit_file", "list_dir", "glob")
def ketch_register_tools(register: Callable[[Any], None]) -> None:
    from ketch_fs.edit_tools import EditFile, WriteFile
    from ketch_fs.listing import Glob, ListDir
    from ketch_fs.read_tool import ReadFile

    for tool in (ReadFile(), WriteFile(), EditFile(), ListDir(), Glob()):
        register(tool)
