"""The results layer: outcomes, the typed case record, reports, causes, verdict words, recall."""
