"""Built-in GPU profiles (package data)."""
