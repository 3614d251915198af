import sys

from codecoder.cli.main import main

sys.exit(main())
