"""The pluggy markers plugins decorate their hook implementations with."""

import pluggy

hookspec = pluggy.HookspecMarker("ketch")
hookimpl = pluggy.HookimplMarker("ketch")
