import sys

from ketch.cli import main

sys.exit(main())
