"""Partition definitions per benchmark: dynamic items x dynamic generators.

One generator set per benchmark, because a multi-partition is a full cross-product and a
generator rarely covers every benchmark. Dimension names sort as (generator, item) so keys read
``<generator>|<item>``.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from dagster import DynamicPartitionsDefinition, MultiPartitionKey, MultiPartitionsDefinition

ITEM_DIMENSION = {
    "entitybench": "episode",
    "vistorybench": "story",
    "locot2v": "sample",
    "mbench": "case",
    "narrativetrack": "video",
}


@dataclass(frozen=True)
class BenchmarkPartitions:
    benchmark: str

    @property
    def item_dim(self) -> str:
        return ITEM_DIMENSION[self.benchmark]

    @cached_property
    def items(self) -> DynamicPartitionsDefinition:
        plural = "stories" if self.item_dim == "story" else f"{self.item_dim}s"
        return DynamicPartitionsDefinition(name=f"{self.benchmark}_{plural}")

    @cached_property
    def generators(self) -> DynamicPartitionsDefinition:
        return DynamicPartitionsDefinition(name=f"{self.benchmark}_generators")

    @cached_property
    def generator_x_item(self) -> MultiPartitionsDefinition:
        return MultiPartitionsDefinition({"generator": self.generators, self.item_dim: self.items})

    def key(self, generator: str, item: str) -> MultiPartitionKey:
        return MultiPartitionKey({"generator": generator, self.item_dim: item})

    def split(self, partition_key: str) -> tuple[str, str]:
        """(generator, item) from a key string, going through the definition (plain-string safe)."""
        dims = self.generator_x_item.get_partition_key_from_str(partition_key).keys_by_dimension
        return dims["generator"], dims[self.item_dim]


ENTITYBENCH = BenchmarkPartitions("entitybench")
