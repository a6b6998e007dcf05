"""`python -m t9k_sdk.cli`: the `t9k-sdk` command."""

import sys

from t9k_sdk.cli import main

sys.exit(main())
