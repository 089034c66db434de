"""The shape of pgbench_accounts_pkey, against nbtsort.c's fill rule computed by hand."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from snapsim_models.btree import inner_level_pages, items_per_page


def test_items_per_page_follow_the_fillfactor_reserve() -> None:
    # 8192 - 24 - 16 = 8152 bytes for items of 20 B; the build adds items while the free
    # space is at least 819 B (leaf, fillfactor 90) or 2457 B (upper, 70), then one more fits.
    assert items_per_page(90) == (8152 - 819) // 20 + 1 == 367
    assert items_per_page(70) == (8152 - 2457) // 20 + 1 == 285
    assert items_per_page(100) == 8152 // 20 + 1


@pytest.mark.parametrize(("scale", "levels"), [
    (1, ()),             # 100,000 rows: 274 leaves fit under the root (284 downlinks)
    (2, (2,)),           # 547 leaves: two inner pages
    (10, (10,)),
    (100, (97,)),        # 27,323 leaves / 284 = 96.2
    (300, (2, 289)),     # 81,968 leaves: 289 inner pages need a second level
    (1000, (4, 963)),
])
def test_levels_by_hand(scale: int, levels: tuple[int, ...]) -> None:
    assert inner_level_pages(scale) == levels


@given(st.integers(min_value=1, max_value=20_000))
def test_each_level_fits_under_the_one_above(scale: int) -> None:
    levels = inner_level_pages(scale)
    leaves = math.ceil(100_000 * scale / 366)
    below = [*levels[1:], leaves][-len(levels):] if levels else []
    for pages, children in zip(levels, below, strict=True):
        assert pages == math.ceil(children / 284)
    assert (levels[0] if levels else leaves) <= 284  # the root holds the top level


def test_a_scale_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="scale"):
        inner_level_pages(0)
