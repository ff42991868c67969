"""Choosing among legal arrangements: the cost model, candidates, timing on a GPU."""
