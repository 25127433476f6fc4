"""Information consumers of a released count (Gupte and Sundararajan, *Universally optimal privacy
mechanisms for minimax agents*): a loss ``l(i, r)`` for answering ``r`` when the truth is ``i``,
side information ``S`` (the inputs the consumer considers possible), and the minimax rule.

* :mod:`.losses`: loss matrices and the parsing of loss and side-information specs;
* :mod:`.remap`: the consumer's optimal randomized remap of a released mechanism, and the
  consumer's own optimal alpha-DP mechanism (two LPs, each certified by weak duality);
* :mod:`.certificates`: those weak-duality certificates, in floats and in exact arithmetic;
* :mod:`.structured_remap`: the remap at large ``n`` (to 10^4) from the weights' structure, with
  :mod:`.structured_certificate` (its bounds over every weight, rounding bounded), :mod:`.window_lp`
  (the remap LP on a window), :mod:`.risks` (every answer's weighted loss in O(n)),
  :mod:`.weight_blocks` (blocks of the weights without the matrix) and :mod:`.answer_table` (a remap
  as a few answers per release).

Nothing is imported here, so that ``countdp.consumers.losses`` (which the command line reads at
start-up) does not pull in the LP stack.
"""
