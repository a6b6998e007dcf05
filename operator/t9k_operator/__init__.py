"""The t9k-operator: reconciles T9k training jobs into pods and services."""
