"""Benchmarks (run each as a script: ``python bench/<name>.py``); a package so tests can import them."""
