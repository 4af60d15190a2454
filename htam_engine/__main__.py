import sys

from htam_engine.cli import main

sys.exit(main())
