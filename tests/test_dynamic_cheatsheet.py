"""dynamic_cheatsheet (Dynamic Cheatsheet, cumulative; Suzgun et al. 2025): reference defaults, the curator's
rewrite after each episode (kept when the answer has no <cheatsheet> tags), per-trial streams, and that it
learns from the agent's own episodes only, without labels. The model is a scripted callable (no language model)."""

from __future__ import annotations

import yaml
from litellm import ModelResponse

import strategies
from conftest import REPO
from strategies import StepView, TaskView, Trajectory
from strategies.dynamic_cheatsheet import (CURATOR_SYSTEM, EMPTY_CHEATSHEET, CheatsheetOptions, DynamicCheatsheet,
                                           extract_cheatsheet)
from strategies.role_llm import RoleLLM


def test_defaults_are_the_references_and_the_config_says_the_same():
    # suzgunmirac/dynamic-cheatsheet language_model.py: temperature 0.0, max_tokens 2048 (the curator 2x),
    # initial cheatsheet "(empty)", the old cheatsheet kept when the tags are missing (utils/extractor.py)
    opts = CheatsheetOptions()
    assert (opts.temperature, opts.max_tokens, EMPTY_CHEATSHEET) == (0.0, 4096, "(empty)")
    cfg = yaml.safe_load((REPO / "configs" / "strategy" / "dynamic_cheatsheet.yaml").read_text())
    assert cfg["options"] == {k: getattr(opts, k) for k in cfg["options"]}
    assert "dynamic_cheatsheet" in strategies.available() and not DynamicCheatsheet.uses_memory
    assert not DynamicCheatsheet.uses_ground_truth({})  # the curator judges correctness itself
    assert extract_cheatsheet("no tags here", "old") == "old"
    assert extract_cheatsheet("<cheatsheet>a</cheatsheet> then <cheatsheet>\nb\n</cheatsheet>", "old") == "b"


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
    assert dc.learns_online and dc.deliver(*view).text == "<cheatsheet>\n(empty)\n</cheatsheet>"
    assert dc.learn(_episode("1")) == {"dc_cheatsheet_kept": False}
    system, user, kwargs = curator.seen[0]
    assert system == CURATOR_SYSTEM and "## Previous cheatsheet\n(empty)" in user and "task 1" in user
    assert (kwargs["temperature"], kwargs["max_tokens"]) == (0.0, 4096)
    assert "- [dc-1] check first (count: 1)" in dc.deliver(*view).text
    assert dc.learn(_episode("2")) == {"dc_cheatsheet_kept": True}  # no tags: the old cheatsheet stays
    assert "- [dc-1] check first" in curator.seen[1][1] and "dc-1" in dc.deliver(*view).text
    assert dc.for_trial(1).deliver(*view).text == "<cheatsheet>\n(empty)\n</cheatsheet>"  # its own stream
