"""`make view RUNS=runs/<run> [RUNS2=...]`: a local web app over run directories (docs/viewer.md).

Reads run files only (results.jsonl, trajectories, the memory files records name); never imports the harness.
Episode list (`episodes`), one episode as the agent saw it (`trajectory`, `memory`), two episodes side by side
(`compare`), served by Flask (`app`) on 127.0.0.1 (`__main__`).
"""
