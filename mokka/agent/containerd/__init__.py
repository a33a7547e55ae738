"""The cri simulator's containerd half: config edits (pure), toolkit, restarts, setup."""
