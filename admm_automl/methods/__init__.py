"""Whole search methods, each composed from one driver, budget and recorder (:mod:`.driver`):
ADMM (Liu et al., AAAI 2020) with its constraint algebra, the JOPT and algorithm-selection
baselines, and FLASH (Zhang et al., KDD 2016). :mod:`.registry` names them."""
