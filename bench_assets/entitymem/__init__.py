"""EntityMem, the EntityBench paper's baseline (Section 4, Appendix C), as a generation pipeline on the asset graph:
configs, agents, bank, layout, compositor, pipeline (pure stages), rows (tables and the comparison), assets, cli."""
