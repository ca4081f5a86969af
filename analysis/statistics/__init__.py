"""Numbers over record frames: bootstrap CIs and paired tests, the metrics per cell, variance, non-inferiority,
the one rule for what a difference means (verdict.py), sizing, harm, infra rates. Imports no other part of analysis
but analysis/fmt.py."""
