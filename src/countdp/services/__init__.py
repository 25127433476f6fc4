"""Services over the mechanisms: their files (save, the one loader, atomic writes) and the cache of certified
mechanisms by name, size and alpha."""
