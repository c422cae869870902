import sys

from pyapp.cli import main

sys.exit(main())
