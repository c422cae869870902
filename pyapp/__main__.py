import sys

from pyapp.cli.main import main

sys.exit(main())
