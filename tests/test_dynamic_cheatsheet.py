"""dynamic_cheatsheet (Dynamic Cheatsheet, Suzgun et al. 2025), both variants: reference defaults, the cumulative
curator's rewrite after each episode (kept when the answer has no <cheatsheet> tags), the retrieval-synthesis
curator once per task from the most similar past episodes, per-trial streams, and that it learns from the agent's
own episodes only, without labels. The model is a scripted callable (no language model)."""

from __future__ import annotations

import pytest
import yaml
from litellm import ModelResponse

import strategies
from ace_fakes import FakeBagOfWordsEmbedder
from conftest import REPO, read_records
from harness.run import check_job, compose_job
from harness.runner import run_job
from strategies import StepView, StrategyContext, TaskView, Trajectory
from strategies.dynamic_cheatsheet.retrieval_synthesis import RS_CURATOR_SYSTEM, RetrievalSynthesisCheatsheet
from strategies.dynamic_cheatsheet.cheatsheet import EMPTY_CHEATSHEET, CheatsheetOptions, extract_cheatsheet
from strategies.dynamic_cheatsheet import DynamicCheatsheet
from strategies.dynamic_cheatsheet.strategy import CURATOR_SYSTEM
from memory_kit.role_llm import RoleLLM


def test_defaults_are_the_references_and_the_config_says_the_same():
    # suzgunmirac/dynamic-cheatsheet language_model.py: temperature 0.0, max_tokens 2048 (the curator 2x),
    # initial cheatsheet "(empty)", the old cheatsheet kept when the tags are missing (utils/extractor.py)
    opts = CheatsheetOptions()
    assert (opts.temperature, opts.max_tokens, EMPTY_CHEATSHEET) == (0.0, 4096, "(empty)")
    cfg = yaml.safe_load((REPO / "configs" / "strategy" / "dynamic_cheatsheet.yaml").read_text())
    assert cfg["options"] == {k: getattr(opts, k) for k in cfg["options"]}
    assert "dynamic_cheatsheet" in strategies.available() and DynamicCheatsheet.declaration.memory_entry_only
    assert not strategies.uses_ground_truth("dynamic_cheatsheet", {})  # the curator judges correctness itself
    assert extract_cheatsheet("no tags here", "old") == "old"
    # the FIRST tag pair, as utils/extractor.py's extract_cheatsheet (a single regex search) takes it
    assert extract_cheatsheet("<cheatsheet>\na\n</cheatsheet> then <cheatsheet>b</cheatsheet>", "old") == "a"


class Curator:
    def __init__(self, answers):
        self.answers, self.seen = list(answers), []

    def __call__(self, model, messages, **kwargs):
        self.seen.append((messages[0]["content"], messages[1]["content"], kwargs))
        return ModelResponse(choices=[{"message": {"role": "assistant", "content": self.answers.pop(0)}}],
                             usage={"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55})


def _episode(task_id: str) -> Trajectory:  # as the runner shows it without ground truth
    return Trajectory(task=TaskView("b", task_id, f"task {task_id}"), messages=(), reward=None, success=None)


def test_the_curator_rewrites_the_cheatsheet_after_each_episode_and_streams_are_apart():
    curator = Curator(["<cheatsheet>\n- [dc-1] check first (count: 1)\n</cheatsheet>", "sorry, no tags"])
    dc = DynamicCheatsheet(llm=RoleLLM("scripted/x", completion=curator))
    view = (TaskView("b", "q", "anything"), StepView(0))
    assert strategies.learns_online("dynamic_cheatsheet", {}) and dc.deliver(*view).text == "<cheatsheet>\n(empty)\n</cheatsheet>"
    assert dc.learn(_episode("1")) == {"dc_cheatsheet_kept": False}
    system, user, kwargs = curator.seen[0]
    assert system == CURATOR_SYSTEM and "## Previous cheatsheet\n(empty)" in user and "task 1" in user
    assert (kwargs["temperature"], kwargs["max_tokens"]) == (0.0, 4096)
    assert "- [dc-1] check first (count: 1)" in dc.deliver(*view).text
    assert dc.learn(_episode("2")) == {"dc_cheatsheet_kept": True}  # no tags: the old cheatsheet stays
    assert "- [dc-1] check first" in curator.seen[1][1] and "dc-1" in dc.deliver(*view).text
    assert dc.for_trial(1).deliver(*view).text == "<cheatsheet>\n(empty)\n</cheatsheet>"  # its own stream


# --- retrieval synthesis (language_model.py DynamicCheatsheet_RetrievalSynthesis) ---------------------------------

def _rs(curator, **options):
    return RetrievalSynthesisCheatsheet(options={"variant": "retrieval_synthesis", **options},
                                        llm=RoleLLM("scripted/x", completion=curator), embedder=FakeBagOfWordsEmbedder())


def _done(task_id: str, text: str, tool: str) -> Trajectory:  # what the agent did, without ground truth
    return Trajectory(task=TaskView("b", task_id, text), reward=None, success=None,
                      messages=({"role": "assistant", "content": None, "tool_calls": [
                          {"id": "c", "type": "function", "function": {"name": tool, "arguments": "{}"}}]},))


def test_retrieval_synthesis_defaults_are_the_references():
    # run_benchmark.py: retrieve_top_k=3; the curator's call as the cumulative one's; the variant is an option
    opts = strategies.typed_options("dynamic_cheatsheet", {"variant": "retrieval_synthesis"})
    assert (opts.top_k, opts.temperature, opts.max_tokens, CheatsheetOptions().variant) == (3, 0.0, 4096, "cumulative")
    made = DynamicCheatsheet.create(StrategyContext(options={"variant": "retrieval_synthesis", "embed_cache": None},
                                                    model="scripted/x"))
    assert type(made).__name__ == "RetrievalSynthesisCheatsheet" and made.state is made
    assert made.declaration.memory_entry_only
    with pytest.raises(ValueError, match="variant='retrieval'; valid: cumulative, retrieval_synthesis"):
        strategies.validate_options("dynamic_cheatsheet", {"variant": "retrieval"})


def test_retrieval_synthesis_curates_once_per_task_from_the_most_similar_past_episodes_most_similar_last():
    curator = Curator(["<cheatsheet>\n- [dc-1] first (count: 1)\n</cheatsheet>", "no tags at all",
                       "<cheatsheet>\n- [dc-1] third (count: 2)\n</cheatsheet>"])
    dc = _rs(curator, top_k=2)
    first = TaskView("b", "1", "exchange the red shoes")
    assert dc.deliver(TaskView("b", "1", ""), StepView(0)).text == "<cheatsheet>\n(empty)\n</cheatsheet>"  # not known
    assert "first" in dc.deliver(first, StepView(0)).text and "first" in dc.deliver(first, StepView(3)).text
    system, user, kwargs = curator.seen[0]
    assert len(curator.seen) == 1 and system == RS_CURATOR_SYSTEM and (kwargs["temperature"], kwargs["max_tokens"]) \
        == (0.0, 4096)
    assert "## Previous cheatsheet\n(empty)\n\n## Notes for cheatsheet\n(empty)" in user
    assert "## Next input\nexchange the red shoes" in user
    for i, (text, tool) in enumerate([("exchange the red shoes", "get_order"), ("cancel a flight", "get_flight"),
                                      ("exchange the blue shoes", "get_user")]):
        assert dc.learn(_done(str(i + 10), text, tool)) == {"dc_pairs": i + 1}
    text = dc.deliver(TaskView("b", "2", "exchange the green shoes"), StepView(0)).text
    notes = curator.seen[1][1].split("## Notes for cheatsheet\n", 1)[1]
    assert "cancel a flight" not in notes and notes.index("blue shoes") < notes.index("red shoes")  # top 2, best last
    assert "PREVIOUS SOLUTIONS (START)" in notes and "get_order" in notes and "- [dc-1] first" in curator.seen[1][1]
    assert "PREVIOUS SOLUTIONS (START)" in text  # no tags: the retrieved episodes themselves (the reference's fallback)
    assert "third" in dc.deliver(TaskView("b", "3", "x"), StepView(0)).text and len(curator.seen) == 3
    assert "(empty)" in dc.for_trial(1).deliver(TaskView("b", "1", ""), StepView(0)).text  # its own stream
    assert dc.for_trial(1).embedder is dc.embedder and dc.for_trial(1) is dc.for_trial(1)


def test_retrieval_synthesis_runs_on_the_simulated_world_one_curator_call_per_episode(artifact, runs_dir):
    cfg = compose_job(["model=simulated", f"model.world={artifact}", "benchmark=tau2_retail", "benchmark.limit=3",
                       "strategy=dynamic_cheatsheet", "strategy.options.variant=retrieval_synthesis",
                       f"runs_dir={runs_dir}", "progress=false", "run_name=rs"])
    check_job(cfg)
    run_job(cfg)
    rows = read_records(runs_dir / "rs")
    assert len(rows) == 3 and all(r["usage"]["strategy"]["calls"] == 1 for r in rows)
    by_task = {r["task_id"]: r for r in rows}  # the stream's first task has nothing earlier: "(empty)" stays
    assert by_task["5"]["memory_tokens"] == 0 < by_task["9"]["memory_tokens"] and by_task["12"]["memory_tokens"] > 0


@pytest.mark.parametrize("variant", ["cumulative", "retrieval_synthesis"])
def test_a_label_never_reaches_the_curator(variant):
    # the runner hides rewards from a strategy that declares no ground truth; were one passed, the prompt is the same
    def prompts(reward, success):
        curator = Curator(["<cheatsheet>\nx\n</cheatsheet>"] * 2)
        dc = _rs(curator) if variant == "retrieval_synthesis" else DynamicCheatsheet(
            llm=RoleLLM("scripted/x", completion=curator))
        done = _done("1", "exchange the red shoes", "get_order")
        dc.learn(Trajectory(task=done.task, messages=done.messages, reward=reward, success=success,
                            feedback="gold: refund 42"))
        dc.deliver(TaskView("b", "2", "exchange the blue shoes"), StepView(0))
        return [user for _, user, _ in curator.seen]

    unlabelled = prompts(None, None)
    assert unlabelled and unlabelled == prompts(1.0, True) == prompts(0.0, False)
    assert not any("refund 42" in p or "reward" in p.lower() for p in unlabelled)
