"""The benchmarks (run as `python bench/<name>.py`; `make bench`, `make bench-operator`). A regular
package, so the import-layer contracts see this directory only."""
