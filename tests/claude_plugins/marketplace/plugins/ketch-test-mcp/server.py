"""The plugin's MCP server: ketch's test server (tests/mcp/mcp_test_server.py, named by
KETCH_TEST_SERVER), run as this plugin's own program."""

import os
import runpy

runpy.run_path(os.environ["KETCH_TEST_SERVER"], run_name="__main__")
