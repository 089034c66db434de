"""Shape of ``pgbench_accounts_pkey``: how many pages each level of the B-tree has at a scale.

``pgbench -i -s SCALE`` loads ``100000 * SCALE`` rows into ``pgbench_accounts`` and then builds
the primary key (an ``int4``) by sorting. The sorted build (``src/backend/access/nbtree/
nbtsort.c``, ``_bt_buildadd``) fills leaf pages until less than ``BLCKSZ * (100 - fillfactor) /
100`` bytes are free (fillfactor ``BTREE_DEFAULT_FILLFACTOR`` = 90) and upper pages until less
than ``BLCKSZ * (100 - BTREE_NONLEAF_FILLFACTOR) / 100`` (70; both ``nbtree.h``), then starts
the next page; it adds levels until one page (the root) holds them all.

An item is an ``IndexTupleData`` (8 B) plus the 4-byte key, ``MAXALIGN``-ed to 16 B, and its
4-byte line pointer; a page has 8192 - 24 (page header) - 16 (``BTPageOpaqueData``) bytes for
items. A leaf then holds 367 items and an upper page 285, one of which is the high key on every
page but the rightmost of its level.

A ``pgbench -S`` transaction reads one random ``aid``: it descends from the root through one page
of each inner level to a leaf. The root is therefore the same page for every transaction, and an
inner page is shared by one transaction in (pages of its level) on average.

Left out: suffix truncation of pivot keys (nothing to truncate in a single ``int4`` column), the
``-inf`` first downlink of inner pages (a few bytes), page splits after the build (``pgbench -S``
inserts nothing) and the metapage (cached in ``rd_amcache``).
"""

from __future__ import annotations

import math

ROWS_PER_SCALE = 100_000
"""``naccounts`` in pgbench.c: rows of ``pgbench_accounts`` per scale unit."""
BLCKSZ = 8192
PAGE_HEADER_BYTES = 24  # SizeOfPageHeaderData (bufpage.h)
BT_SPECIAL_BYTES = 16  # MAXALIGN(sizeof(BTPageOpaqueData)) (nbtree.h)
ITEM_BYTES = 16 + 4  # MAXALIGN(IndexTupleData + int4) + ItemIdData
LEAF_FILLFACTOR = 90  # BTREE_DEFAULT_FILLFACTOR
NONLEAF_FILLFACTOR = 70  # BTREE_NONLEAF_FILLFACTOR
DEFAULT_PGBENCH_SCALE = 100
"""ASSUMPTION: the published benchmarks do not give their scale; "memory resident" bounds it (the
machines have 192 GiB or more, about 15 MiB per scale unit), and scales from 10 to 284 give the
same tree height (one inner level of 10 to 284 pages). 100 is a common choice (97 inner pages)."""


def items_per_page(fillfactor: int) -> int:
    """Items the sorted build puts on a page: it adds while at least the reserve is free."""
    usable = BLCKSZ - PAGE_HEADER_BYTES - BT_SPECIAL_BYTES
    reserve = BLCKSZ * (100 - fillfactor) // 100
    return (usable - reserve) // ITEM_BYTES + 1


def inner_level_pages(scale: int) -> tuple[int, ...]:
    """Pages of each level between the root and the leaves, top-down (empty: root over leaves).

    Raises:
        ValueError: a scale below 1.
    """
    if scale < 1:
        raise ValueError(f"pgbench scale must be at least 1, got {scale}")
    per_leaf = items_per_page(LEAF_FILLFACTOR) - 1  # less the high key
    per_inner = items_per_page(NONLEAF_FILLFACTOR) - 1
    pages = math.ceil(ROWS_PER_SCALE * scale / per_leaf)
    levels: list[int] = []
    while pages > 1:
        pages = math.ceil(pages / per_inner)
        levels.append(pages)
    # levels ends with the root (1 page) when there is more than one leaf
    return tuple(reversed(levels[:-1]))
