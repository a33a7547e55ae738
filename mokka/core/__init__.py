"""Shared facts and pure transformations used by every Mokka command."""
