"""Layer 0: dtype and element tables, naming, files, project settings: imports nothing of opkit."""
