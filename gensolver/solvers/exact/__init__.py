"""Exact winner determination: MILP/CP backends on the XOR-bundle formulation."""
