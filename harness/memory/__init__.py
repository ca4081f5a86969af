"""Building memory artifacts and checking where they learned from: `python -m harness.memory.build` (guideline
memory from a run's trajectories), `python -m harness.memory.ace_adapt` (offline ACE playbook),
`python -m harness.memory.simulated` (the simulated world's artifact) and provenance (in-sample check)."""
