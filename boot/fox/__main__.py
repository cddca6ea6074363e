import sys

from fox.cli import main

sys.exit(main())
