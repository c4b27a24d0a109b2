"""ketch_text_kit: handling text that came from somewhere ketch does not trust (a library).

* ``unicode``: instruction files, tool descriptions from MCP servers, fetched web pages
  and search results pass through ``strip_invisible`` before a model reads them;
* ``terminal``: the one sanitiser for text from the model or a tool on its way to a
  terminal (escape sequences shown, never obeyed);
* ``names``: file names that are not UTF-8, shown as text (``bad\\xff.txt``) and kept
  exactly where they are stored;
* ``jsonline``: one JSON value per line from a peer (an editor, a script, a hook),
  bounded in size and depth.

It registers nothing, so every plugin that uses it can be disabled alone.
"""
