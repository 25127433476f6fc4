"""Multi-level release (Gupte-Sundararajan Section 4.1): one count released at several privacy levels.

Levels ``alpha_0 < alpha_1 < ...`` (larger alpha = more private) are released as a Markov chain:
the mechanism at the least private level, then each more private level by post-processing the
one before, so a colluding set learns no more than its least private member.  GM chains at every
pair (:mod:`~countdp.multilevel.transitions` gives the exact ``T`` and its closed form); EM, WM
and WH only where their pairs are derivable (:mod:`~countdp.multilevel.families`, refused with one
line elsewhere).  :mod:`~countdp.multilevel.chain` is the sampled, certified object;
:mod:`~countdp.multilevel.derivable` decides derivability for any pair of mechanisms.
"""

from countdp.multilevel.certificate import LevelsCertificate
from countdp.multilevel.chain import ChainSettings, LevelChain, build_level_chain
from countdp.multilevel.families import CHAIN_MECHANISMS

__all__ = ["CHAIN_MECHANISMS", "ChainSettings", "LevelChain", "LevelsCertificate", "build_level_chain"]
