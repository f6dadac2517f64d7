"""The generator-card keys each benchmark's code reads, beside the common name / benchmark / description / model_card
(core/generators.py COMMON_CARD_KEYS): a misspelt one is refused, any other unknown key is a warning (the reasons:
core/generators.card_key_findings). The CLI reads it, and definitions.py hands it to the sensors and evaluate jobs
(issue 39: the check ran in bench evaluate only); above core (core names no benchmark), free of YAML and Dagster so
`bench --help` stays light.
tests/test_cli_inputs.py checks the table against the benchmarks' sources."""

CARD_KEYS: dict[str, tuple[str, ...]] = {
    "entitybench": ("entitymem",),                          # EntityMem's arms name their configuration
    "locot2v": (),
    "mbench": (),
    "narrativetrack": ("kind", "model", "frames", "backend", "base_url", "api_key_env", "image_size"),
    "vistorybench": ("language", "rank", "reference_mode", "mode", "timestamp"),  # the last two: layout.py
}
