"""Private numerical cores (numpy and scipy only) that the solvers are thin adapters over: the
Gaussian-process model, acquisitions and their optimisation, FLASH's ridge/EIPS/D-optimal
numerics (Zhang et al., KDD 2016) and BAPI's learning-curve GP (Belakaria et al., 2022)."""
