"""Benchmarks that print tables (run them with ``robot-dynamics bench``); they need the test extras."""
