"""Reductions of the design LP: each maps a problem to an easier one and answers back (an inverse
that turns the easier problem's dual, or point, into one of the original)."""
