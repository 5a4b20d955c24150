"""A run: the world that wires nodes to the database, the workload, faults, and the cost estimate."""
