"""Run directories into frames (load.py) and what a cell is (cells, identity, task sets, deliveries, corruption),
with what it cost (costs, build_cost). Stands on analysis/statistics."""
