"""Developer tools of the repository (run as `python tools/<name>.py`) and the test kit,
`tools.kit`. A regular package, so `tools` is this directory only, never merged with another
checkout's on the path."""
