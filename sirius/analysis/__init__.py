"""Analysis: frontend, kernel and host models, alias facts, UAR and dependence widths."""
