"""Thin command-line entry points; each imports only what it runs."""
