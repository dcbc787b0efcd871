"""``python -m sb3_complementary.zoo {train,enjoy,record-video} ...``: see :mod:`sb3_complementary.zoo.cli`."""

import sys

from sb3_complementary.zoo.cli import main

if __name__ == "__main__":
    sys.exit(main())
