"""What a run means: each job's history, the invariants, metrics, expectations and the narrative."""
