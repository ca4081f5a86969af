"""The names of a run's record file and of the fields every results.jsonl record has: one definition for the
runner, the store, the executors and analysis. Plain strings, stdlib only: analysis imports this module and
still loads no harness code (tests/test_import_graph.py checks it). harness/records.py builds the typed
EpisodeRecord from them."""

RESULTS = "results.jsonl"  # one record per line, in the run directory

# every benchmark's episode (harness/records.py EpisodeRecord; the ledger adds steps, token and delivery columns)
TASK_ID, SUCCESS, REWARD, TERMINATION = "task_id", "success", "reward", "termination"
ERROR, ERROR_DETAIL, WALL_S, TASK_TEXT = "error", "error_detail", "wall_s", "task_text"
STEPS = "steps"  # the ledger's count of agent steps (0 in the record of an episode that never ran)
EPISODE_FIELDS = (TASK_ID, SUCCESS, REWARD, TERMINATION, ERROR, ERROR_DETAIL, WALL_S, TASK_TEXT)

# what the runner adds around it (harness/runner/episode.py, job.py)
JOB, TRIAL, SEED, ATTEMPT, TRAJECTORY, STARTED_AT = "job", "trial", "seed", "attempt", "trajectory", "started_at"
