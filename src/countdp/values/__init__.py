"""Values every layer shares: the exact alpha, the design objectives, the properties by name and the
catalogue of named mechanisms.  Nothing here imports another countdp package but validation."""
