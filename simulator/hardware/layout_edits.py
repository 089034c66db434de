"""Layout what-ifs: edits of the structs and arrays of a :class:`~.layout.SharedMemory`.

A program's shared memory is described once, by the allocations its model makes
(:meth:`SharedMemory.alloc`). :class:`EditedSharedMemory` is that allocator with a list of edits
applied, in order, to each region as it is allocated, so that every address, span, scan, line
label and field name computed from the regions follows the edited layout. An edit names a region
by its label stem (the name the per-line table shows, ``PGXACT``, ``VariableCache``,
``MainLWLockArray``) and a field by ``region.field`` (``PGXACT.xmin``; nested fields keep their
dots, ``BufferDescriptors.content_lock.state``). The YAML syntax (:func:`parse_layout_edits`),
one mapping per edit:

``{move: R.f, to: own_line}``
    Field ``f`` (with the fields nested in it) moves to the start of a new cache line appended to
    the element: offset ``align_up(sizeof, 64)``, and the element grows to the end of that line
    (``offset + align_up(size of f, 64)``). Its old bytes become padding; the other fields keep
    their offsets. The element becomes 64-aligned: the stride is rounded up to a multiple of 64
    and the region's start alignment raised to at least 64, so that in every element the field's
    line holds nothing else (later edits may undo this: a ``pad`` or ``align`` to less).
``{move: R.f, to: array}``
    Field ``f`` leaves the element for a dense parallel array named ``R.f`` (one element per
    element of ``R``, each ``f`` alone, ``sizeof(f)`` apart), allocated right after ``R`` with
    ``R``'s requested start alignment, as a separate allocation at that point would be. Every
    access to ``f`` through ``R`` goes to that array. ``R``'s size is recomputed from its
    remaining fields (below); their offsets do not change. The array is a region like any other:
    later edits can ``pad`` or ``align`` it (``{pad: R.f, to: 64}``: one line per element).
``{pad: R, to: N}``
    Elements of ``R`` are ``N`` bytes apart (the padded element size; for a single struct, the
    bytes allocated to it). ``N`` must be at least the element's size.
``{align: R, to: N}``
    ``R`` starts at the next multiple of ``N`` (a power of two) when it is allocated, instead of
    the alignment its allocation asked for.
``{reorder: R, fields: [f1, f2, ...]}``
    The listed fields (each with its nested fields) are laid out back to back in that order,
    each at its natural alignment, from the lowest offset among them; unlisted fields keep their
    offsets; ``R``'s size is then recomputed. Bytes between the listed fields that no field
    describes are reused, so list the fields of a fully described stretch.

Sizes. A *natural alignment* is ASSUMPTION the LP64 rule for scalars extended to aggregates: the
largest power of two dividing the field's size, at most 8 (4 B int -> 4, 16 B list head -> 8,
12 B latch -> 4). A struct's alignment is the largest natural alignment of its fields (64 after a
``move ... to: own_line``), and a recomputed size is the end of its last field rounded up to that
alignment (PGXACT: 11 B of fields -> 12). This assumes, as holds for every struct whose last
field is modelled, that no undescribed bytes follow the last field. A region whose stride equalled
its element size (an unpadded array) keeps stride = size; a padded one keeps its stride unless the
element outgrows it.

Applicability. An edit applies to a region when the region (or, for ``move``, the region and the
field; for ``reorder``, every listed field) exists when its family is allocated; the *family* of
``R`` is ``R`` and the arrays made from its fields. An edit that does not apply is skipped and
remembered (:attr:`EditedSharedMemory.unapplied`): a model with several layouts (program
versions) can accept an edit that fits some of them and reject one that fits none. Edits of
different families do not interact; within a family they apply in order.

Left out: moving a field into another struct, moving a field of an array made by ``to: array``
again to another array, and packing a struct's fields automatically (``reorder`` does it when
asked).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Literal

from simulator.config.values import check_keys, describe_kind
from simulator.errors import ConfigError
from simulator.hardware.layout import LINE_BYTES, Region, SharedMemory, Struct, align_up

__all__ = [
    "EDIT_KINDS",
    "MOVE_DESTINATIONS",
    "Align",
    "EditedSharedMemory",
    "LayoutEdit",
    "Move",
    "Pad",
    "Reorder",
    "natural_alignment",
    "parse_layout_edits",
]

EDIT_KINDS = ("move", "pad", "align", "reorder")
MOVE_DESTINATIONS = ("own_line", "array")
MAX_NATURAL_ALIGNMENT = 8
"""ASSUMPTION (LP64): no scalar member is aligned beyond 8 B (``long``, pointers, ``double``)."""


@dataclass(frozen=True, slots=True)
class Move:
    """``{move: target, to: own_line | array}``: a field to its own line or its own array."""

    kind: ClassVar[str] = "move"
    key: str
    """Dotted key of the edit in its configuration (``options.layout[0]``), for errors."""
    target: str
    """``region.field``."""
    to: Literal["own_line", "array"]


@dataclass(frozen=True, slots=True)
class Pad:
    """``{pad: target, to: size_bytes}``: the distance between elements."""

    kind: ClassVar[str] = "pad"
    key: str
    target: str
    size_bytes: int


@dataclass(frozen=True, slots=True)
class Align:
    """``{align: target, to: alignment_bytes}``: the region's start alignment."""

    kind: ClassVar[str] = "align"
    key: str
    target: str
    alignment_bytes: int


@dataclass(frozen=True, slots=True)
class Reorder:
    """``{reorder: target, fields: [...]}``: the listed fields packed in that order."""

    kind: ClassVar[str] = "reorder"
    key: str
    target: str
    fields: tuple[str, ...]


LayoutEdit = Move | Pad | Align | Reorder


def natural_alignment(size_bytes: int) -> int:
    """ASSUMPTION: the largest power of two dividing ``size_bytes``, at most 8 (see module)."""
    return min(size_bytes & -size_bytes, MAX_NATURAL_ALIGNMENT)


def _power_of_two(value: int) -> bool:
    return value >= 1 and value & (value - 1) == 0


# ------------------------------------------------------------------------------------ parsing


def parse_layout_edits(value: object, key: str) -> tuple[LayoutEdit, ...]:
    """Check the YAML list of edits (see the module docstring) and return them.

    Args:
        value: the parsed YAML value (a list of mappings).
        key: its dotted key, e.g. ``options.layout``; edit ``i`` is ``key[i]`` in errors.

    Raises:
        ConfigError: not a list of mappings, an unknown or missing edit kind, an unknown key,
            a bad ``to`` (unknown destination, a size below 1, an alignment that is not a power
            of two) or a bad ``fields`` list, named by its key.
    """
    if not isinstance(value, list):
        raise ConfigError(key, f"expected a list of edits, got {describe_kind(value)}")
    return tuple(_parse_edit(item, f"{key}[{i}]") for i, item in enumerate(value))


def _parse_edit(item: object, key: str) -> LayoutEdit:
    if not isinstance(item, Mapping):
        raise ConfigError(key, f"expected a mapping such as {{move: PGXACT.xmin, to: own_line}}, "
                          f"got {describe_kind(item)}")
    kinds = [kind for kind in EDIT_KINDS if kind in item]
    if len(kinds) != 1:
        found = ", ".join(str(k) for k in item) or "nothing"
        raise ConfigError(key, f"expected exactly one edit kind of {', '.join(EDIT_KINDS)}, "
                          f"got {found}")
    kind = kinds[0]
    second = "fields" if kind == "reorder" else "to"
    check_keys(item, key, (kind, second))
    target = item[kind]
    example = "a struct and field such as PGXACT.xmin" if kind == "move" else \
        "a struct or array name such as PGXACT"
    if (not isinstance(target, str) or not target or target.startswith(".")
            or target.endswith(".") or (kind == "move" and "." not in target)):
        raise ConfigError(f"{key}.{kind}", f"expected {example}, got {target!r}")
    if kind == "move":
        to = item["to"]
        if to == "own_line":
            return Move(key, target, "own_line")
        if to == "array":
            return Move(key, target, "array")
        raise ConfigError(f"{key}.to", f"expected own_line or array, got {to!r}")
    if kind == "reorder":
        names = item["fields"]
        if (not isinstance(names, list) or not names
                or not all(isinstance(n, str) and n for n in names)):
            raise ConfigError(f"{key}.fields", f"expected a non-empty list of field names, got "
                              f"{describe_kind(names)}")
        if len(set(names)) != len(names):
            raise ConfigError(f"{key}.fields", "lists a field twice")
        return Reorder(key, target, tuple(names))
    size = item["to"]
    if isinstance(size, bool) or not isinstance(size, int):
        raise ConfigError(f"{key}.to", f"expected a number of bytes, got {describe_kind(size)}")
    if kind == "pad":
        if size < 1:
            raise ConfigError(f"{key}.to", f"must be a positive number of bytes, got {size}")
        return Pad(key, target, size)
    if not _power_of_two(size):
        raise ConfigError(f"{key}.to", f"must be a power of two (bytes), got {size}")
    return Align(key, target, size)


# ------------------------------------------------------------------------------- application


@dataclass
class _Draft:
    """The mutable layout of one region while its family's edits apply."""

    name: str
    struct_name: str
    fields: dict[str, tuple[int, int]]
    size: int
    stride: int
    align: int
    type_align: int
    side: bool = False
    """An array made by ``move ... to: array`` (its field cannot move to an array again)."""
    detached: dict[str, _Draft] = field(default_factory=dict)

    @classmethod
    def of(cls, name: str, struct: Struct, stride: int, align: int) -> _Draft:
        fields = dict(struct.fields)
        type_align = max((natural_alignment(size) for _, size in fields.values()), default=1)
        return cls(name, struct.name, fields, struct.size, stride, align, type_align)

    def group(self, fname: str) -> list[str]:
        """The field and the fields nested in it."""
        return [n for n in self.fields if n == fname or n.startswith(fname + ".")]

    def shift(self, fname: str, offset: int) -> None:
        """Move a field (and its nested fields) so that it starts at ``offset``."""
        delta = offset - self.fields[fname][0]
        for n in self.group(fname):
            o, s = self.fields[n]
            self.fields[n] = (o + delta, s)

    def resize(self, size: int) -> None:
        """Set the element size; an unpadded array's stride follows it, a padded one grows."""
        padded = self.stride > self.size
        self.size = size
        self.stride = max(self.stride, size) if padded else size

    def fitted_size(self) -> int:
        """The end of the last field rounded up to the struct's alignment."""
        end = max(o + s for o, s in self.fields.values())
        return align_up(end, self.type_align)

    def struct(self, key: str) -> Struct:
        try:
            return Struct(self.struct_name, self.size, self.fields)
        except ValueError as exc:
            raise ConfigError(key, f"{exc} after the edit") from None


class _SkipError(Exception):
    """The edit does not apply to this family (the region or a field is absent)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class EditedSharedMemory(SharedMemory):
    """A :class:`SharedMemory` that applies layout edits to the regions it allocates.

    Attributes:
        edits: the edits, applied in order within each family (see the module docstring).
        applied: indices of the edits applied so far.
        unapplied: for each edit not (yet) applied to any region, why the last family it
            named skipped it (``""``: no region of that name was allocated).
    """

    def __init__(self, base: int = 0, edits: Sequence[LayoutEdit] = ()) -> None:
        super().__init__(base)
        self.edits: tuple[LayoutEdit, ...] = tuple(edits)
        self.applied: set[int] = set()
        self.unapplied: dict[int, str] = dict.fromkeys(range(len(self.edits)), "")

    def alloc(
        self,
        name: str,
        element: Struct | int,
        count: int = 1,
        align: int = 8,
        *,
        stride: int | None = None,
        element_names: Mapping[int, str] | None = None,
    ) -> Region:
        """:meth:`SharedMemory.alloc` with the edits of ``name``'s family applied.

        Returns:
            The region of ``name``; arrays made from its fields follow it in memory.

        Raises:
            ConfigError: an edit that applies but cannot be made (a pad below the element size,
                overlapping fields after a reorder), named by its key.
        """
        family = [(i, edit) for i, edit in enumerate(self.edits)
                  if edit.target == name or edit.target.startswith(name + ".")]
        if not family:
            return super().alloc(name, element, count, align, stride=stride,
                                 element_names=element_names)
        struct = Struct.scalar(name, element) if isinstance(element, int) else element
        main = _Draft.of(name, struct, struct.size if stride is None else stride, align)
        for i, edit in family:
            try:
                _apply(main, edit, align)
            except _SkipError as skip:
                if i not in self.applied:
                    self.unapplied[i] = skip.reason
                continue
            self.applied.add(i)
            self.unapplied.pop(i, None)
        return self._place(main, count, element_names or {}, family[0][1].key)

    def _place(self, main: _Draft, count: int, element_names: Mapping[int, str],
               key: str) -> Region:
        base = align_up(self.free, main.align)
        address = base + count * main.stride
        sides: list[Region] = []
        for draft in main.detached.values():
            side_base = align_up(address, draft.align)
            sides.append(Region(draft.name, draft.struct(key), count, side_base, draft.stride))
            address = sides[-1].end
        region = Region(main.name, main.struct(key), count, base, main.stride, element_names,
                        detached=dict(zip(main.detached, sides, strict=True)))
        for placed in (region, *sides):
            self.register(placed)
        return region


def _family(main: _Draft) -> dict[str, _Draft]:
    return {main.name: main, **{d.name: d for d in main.detached.values()}}


def _region(main: _Draft, edit: LayoutEdit) -> _Draft:
    draft = _family(main).get(edit.target)
    if draft is None:
        raise _SkipError("")
    return draft


def _field(main: _Draft, target: str) -> tuple[_Draft, str]:
    """The region and field a ``move`` names: the longest region name that prefixes it."""
    family = _family(main)
    for name in sorted(family, key=len, reverse=True):
        if target.startswith(name + "."):
            draft, fname = family[name], target[len(name) + 1:]
            if fname in draft.fields:
                return draft, fname
            if fname in draft.detached:
                raise _SkipError(f"field {fname} of {name} is already the separate array "
                            f"{draft.detached[fname].name}")
            raise _SkipError(f"{name} has no field {fname!r} (fields: {', '.join(draft.fields)})")
    raise _SkipError("")


def _apply(main: _Draft, edit: LayoutEdit, requested_align: int) -> None:
    """Apply one edit to the family of ``main`` (:class:`_SkipError` when it does not fit)."""
    if isinstance(edit, Move):
        draft, fname = _field(main, edit.target)
        if edit.to == "own_line":
            _move_to_own_line(draft, fname)
        else:
            _move_to_array(main, draft, fname, requested_align, edit.key)
    elif isinstance(edit, Pad):
        draft = _region(main, edit)
        if edit.size_bytes < draft.size:
            raise ConfigError(f"{edit.key}.to", f"{edit.size_bytes} B is smaller than "
                              f"{draft.name}'s element ({draft.size} B)")
        draft.stride = edit.size_bytes
    elif isinstance(edit, Align):
        _region(main, edit).align = edit.alignment_bytes
    else:
        _reorder(_region(main, edit), edit)


def _move_to_own_line(draft: _Draft, fname: str) -> None:
    _, size = draft.fields[fname]
    offset = align_up(draft.size, LINE_BYTES)
    draft.shift(fname, offset)
    draft.type_align = max(draft.type_align, LINE_BYTES)
    draft.stride = align_up(max(draft.stride, offset + align_up(size, LINE_BYTES)), LINE_BYTES)
    draft.size = offset + align_up(size, LINE_BYTES)
    draft.align = max(draft.align, LINE_BYTES)


def _move_to_array(main: _Draft, draft: _Draft, fname: str, requested_align: int,
                   key: str) -> None:
    if draft.side:
        raise ConfigError(f"{key}.move", f"{draft.name} is already an array made from a field; "
                          f"move its field to its own line or pad the array instead")
    group = draft.group(fname)
    if len(group) == len(draft.fields):
        raise ConfigError(f"{key}.move", f"{fname} is the only field of {draft.name}: pad or "
                          f"align {draft.name} instead")
    offset, size = draft.fields[fname]
    side_fields = {n: (draft.fields[n][0] - offset, draft.fields[n][1]) for n in group}
    for n in group:
        del draft.fields[n]
    draft.resize(draft.fitted_size())
    name = f"{draft.name}.{fname}"
    main.detached[fname] = _Draft(name, name, side_fields, size, size, requested_align,
                                  natural_alignment(size), side=True)


def _reorder(draft: _Draft, edit: Reorder) -> None:
    missing = [n for n in edit.fields if n not in draft.fields]
    if missing:
        raise _SkipError(f"{draft.name} has no field {missing[0]!r} (fields: "
                    f"{', '.join(draft.fields)})")
    for n in edit.fields:
        outer = [o for o in edit.fields if n != o and n.startswith(o + ".")]
        if outer:
            raise ConfigError(f"{edit.key}.fields", f"{n} is nested in {outer[0]}, which is "
                              f"listed too (a field moves with the fields nested in it)")
    cursor = min(draft.fields[n][0] for n in edit.fields)
    for n in edit.fields:
        size = draft.fields[n][1]
        cursor = align_up(cursor, natural_alignment(size))
        draft.shift(n, cursor)
        cursor += size
    draft.resize(draft.fitted_size())
    _check_disjoint(draft, f"{edit.key}.fields")


def _check_disjoint(draft: _Draft, key: str) -> None:
    """Two fields may share bytes only when one is nested in the other (``a`` and ``a.b``)."""
    items = sorted(draft.fields.items(), key=lambda item: item[1][0])
    for i, (name, (offset, size)) in enumerate(items):
        for other, (o2, _s2) in items[i + 1:]:
            if o2 >= offset + size:
                break
            nested = other.startswith(name + ".") or name.startswith(other + ".")
            if not nested:
                raise ConfigError(key, f"fields {name} and {other} of {draft.name} overlap "
                                  f"after the edit")
