"""`python -m t9k_operator`: the same as the `t9k-operator` console script."""

import sys

from t9k_operator.cli import main

sys.exit(main())
