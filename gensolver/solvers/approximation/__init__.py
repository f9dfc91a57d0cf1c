"""Approximate winner determination: greedy and LP-based methods with documented guarantees."""
