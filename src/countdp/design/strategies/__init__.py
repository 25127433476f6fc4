"""The design strategies: each answers a design request one way, behind :class:`countdp.design.strategy.Strategy`."""
