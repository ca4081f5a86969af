"""Rows whose memory learned otherwise than their design declares usual (`labelled_by_default`) are named apart,
whatever the design is called; a design that declares nothing, or one this install lacks, is never renamed."""

from __future__ import annotations

import pandas as pd

from analysis.runs.ground_truth import ground_truth_labels


def test_rows_that_depart_from_their_designs_usual_labels_are_named_apart():
    df = pd.DataFrame({"strategy": ["ace", "ace", "ace_online", "ace_online", "ace_retrieval", "my_plugin", "full"],
                       "memory_ground_truth": [True, False, False, True, False, False, None]})
    assert list(ground_truth_labels(df)) == ["ace", "ace (no GT)", "ace_online", "ace_online (GT)", "ace_retrieval",
                                             "my_plugin", "full"]


def test_rows_without_the_column_keep_their_names():
    df = pd.DataFrame({"strategy": ["ace", "ace_online"]})
    assert list(ground_truth_labels(df)) == ["ace", "ace_online"]
