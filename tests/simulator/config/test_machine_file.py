"""Loading machine files: the shipped machines, and one ConfigError per kind of bad input."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from simulator.config import machine_file as machine_loader
from simulator.config.machine import CoherenceProtocol, HomeRelation, L3Inclusion
from simulator.config.machine_file import (
    load_machine,
    machine_from_dict,
    machines_dir,
    names_a_file,
    shipped_machines,
)
from simulator.config.yaml_io import parse_yaml
from simulator.errors import ConfigError

WriteYaml = Callable[[Any], Path]
Mutation = Callable[[dict[str, Any]], None]

# --------------------------------------------------------------------------------------------
# Shipped machines
# --------------------------------------------------------------------------------------------


# The shipped machines, by the names users pass to --machine, and what each one is. Per machine:
# sockets, L3 domains per socket, cores per domain, threads per core, protocol, L3 inclusion,
# virtualized.
SHIPPED_MACHINES: dict[str, tuple[int, int, int, int, CoherenceProtocol, L3Inclusion, bool]] = {
    "gold5215-2s": (2, 1, 10, 2, CoherenceProtocol.MESIF, L3Inclusion.NON_INCLUSIVE, False),
    "platinum8168-2s-vm": (2, 1, 24, 2, CoherenceProtocol.MESIF, L3Inclusion.NON_INCLUSIVE, True),
    "azure-f72s-v2": (2, 1, 18, 2, CoherenceProtocol.MESIF, L3Inclusion.NON_INCLUSIVE, True),
    "threadripper-3990x": (1, 16, 4, 2, CoherenceProtocol.MOESI, L3Inclusion.VICTIM, False),
    "e7-8890v3-4s": (4, 1, 18, 2, CoherenceProtocol.MESIF, L3Inclusion.INCLUSIVE, False),
    "westmere-ex-8s": (8, 1, 8, 2, CoherenceProtocol.MESIF, L3Inclusion.INCLUSIVE, False),
    "westmere-ex-80c": (8, 1, 10, 1, CoherenceProtocol.MESIF, L3Inclusion.INCLUSIVE, False),
    "opteron-6172-4s": (4, 2, 6, 1, CoherenceProtocol.MOESI, L3Inclusion.VICTIM, False),
    "sapphire-rapids-2s": (2, 1, 56, 2, CoherenceProtocol.MESIF, L3Inclusion.NON_INCLUSIVE, False),
    "epyc-9654-2s": (2, 12, 8, 2, CoherenceProtocol.MOESI, L3Inclusion.VICTIM, False),
    "graviton3": (1, 1, 64, 1, CoherenceProtocol.MESIF, L3Inclusion.NON_INCLUSIVE, False),
    "xeon-8375c-2s-vm": (2, 1, 32, 2, CoherenceProtocol.MESIF, L3Inclusion.NON_INCLUSIVE, True),
    "epyc-7r13-2s-vm": (2, 6, 8, 2, CoherenceProtocol.MOESI, L3Inclusion.VICTIM, True),
}


def test_shipped_machines_are_listed() -> None:
    names = shipped_machines()
    assert {"gold5215-2s", "threadripper-3990x"} <= set(names)
    assert names == sorted(names)
    assert machines_dir().is_dir()


def test_shipped_machines_are_exactly_the_spec_names() -> None:
    assert set(shipped_machines()) == set(SHIPPED_MACHINES)


@pytest.mark.parametrize("name", sorted(SHIPPED_MACHINES))
def test_spec_machine_shape(name: str) -> None:
    config = load_machine(name)
    topo = config.topology
    sockets, domains, cores, threads, protocol, inclusion, virtualized = SHIPPED_MACHINES[name]
    assert (topo.sockets, topo.domains_per_socket, topo.cores_per_domain,
            topo.threads_per_core) == (sockets, domains, cores, threads)
    assert (config.protocol, config.l3_inclusion) == (protocol, inclusion)
    assert config.virtualized is virtualized
    # The description says whether the machine is virtualized.
    assert ("virtualized" in config.description) is virtualized
    # A hypervisor exit on wake-ups only on the virtual machines.
    assert (config.scheduler.ipi_exit_ns > 0) is virtualized


def test_only_the_cloud_machines_are_virtualized() -> None:
    virtual = {name for name in shipped_machines() if load_machine(name).virtualized}
    assert virtual == {"azure-f72s-v2", "platinum8168-2s-vm", "xeon-8375c-2s-vm",
                       "epyc-7r13-2s-vm"}


@pytest.mark.parametrize("name", shipped_machines())
def test_every_shipped_machine_loads_and_is_named_after_its_file(name: str) -> None:
    config = load_machine(name)
    assert config.name == name
    assert config.description
    assert config.sources


def test_gold5215() -> None:
    gold = load_machine("gold5215-2s")
    topo = gold.topology
    assert (topo.sockets, topo.domains_per_socket, topo.cores_per_domain,
            topo.threads_per_core) == (2, 1, 10, 2)
    assert gold.protocol is CoherenceProtocol.MESIF
    assert gold.l3_inclusion is L3Inclusion.NON_INCLUSIVE
    assert gold.clock_ghz == 2.5
    assert not gold.virtualized
    assert (gold.l1d.size_bytes, gold.l1d.ways, gold.l1d.sets) == (32 * 1024, 8, 64)
    assert (gold.l2.size_bytes, gold.l2.ways, gold.l2.sets) == (1024**2, 16, 1024)
    assert (gold.l3.ways, gold.l3.sets) == (11, 20480)
    assert gold.l2.latency_ns == pytest.approx(14 / 2.5)  # cycles converted with the clock
    assert gold.l3.latency_ns == pytest.approx(30.8)
    assert gold.l2.key == "caches.l2"
    assert [node.near_domains for node in gold.memory.home_nodes] == [(0,), (1,)]
    assert (gold.memory.dram_near_ns, gold.memory.dram_far_ns) == (81.2, 130.2)
    assert (gold.memory.placement, gold.memory.placement_node) == ("node", 0)
    lat = gold.latency
    assert (lat.smt_sibling_ns, lat.local_hit_ns, lat.local_hitm_ns) == (7.4, 55.5, 55.6)
    assert lat.upgrade_ns == pytest.approx(gold.l3.latency_ns)
    assert lat.remote_hitm is not None
    assert lat.remote_hitm.get(HomeRelation.HOLDER) == 115.6
    assert lat.remote_hitm.get(HomeRelation.REQUESTER) == 178.2
    assert lat.remote_hit == lat.remote_hitm
    assert lat.cross_domain_hit is None
    assert (gold.mlp.stream, gold.mlp.indirect) == (10, 4)
    assert gold.scheduler.time_slice_ns == 3e6
    assert gold.scheduler.context_switch_ns == 2000
    assert gold.scheduler.wakeup_ns == 2000
    assert gold.scheduler.ipi_exit_ns == 0
    assert gold.scheduler.smt_throughput == 1.25
    assert {"S2", "S4", "S5", "S10"} <= set(gold.sources)


def test_threadripper_3990x() -> None:
    tr = load_machine("threadripper-3990x")
    assert tr.topology.sockets * tr.topology.domains_per_socket == 16
    assert (tr.topology.cores_per_domain, tr.topology.threads_per_core) == (4, 2)
    assert tr.protocol is CoherenceProtocol.MOESI
    assert tr.l3_inclusion is L3Inclusion.VICTIM
    assert tr.clock_ghz == 2.9
    assert (tr.l2.size_bytes, tr.l2.sets) == (512 * 1024, 1024)
    assert (tr.l3.size_bytes, tr.l3.ways) == (16 * 1024**2, 16)
    assert tr.l3.latency_ns == pytest.approx(39 / 2.9)
    assert [node.near_domains for node in tr.memory.home_nodes] == [
        tuple(range(8)), tuple(range(8, 16))
    ]
    assert (tr.memory.placement, tr.memory.interleave_bytes) == ("interleave", 4096)
    for keyed in (tr.latency.cross_domain_hit, tr.latency.cross_domain_hitm):
        assert keyed is not None
        assert keyed.neither == 103
        assert (keyed.both, keyed.requester, keyed.holder) == (87, 108, 108)
    assert tr.latency.remote_hitm is None
    assert tr.latency.local_hitm_ns == 20
    assert tr.latency.atomic_local_ns == pytest.approx(18 / 2.9)


def test_milan_keys_cross_ccx_transfers_by_home() -> None:
    """On the 7R13 two CCXs of the line's home socket pass it in 108 ns, of the other in 200."""
    milan = load_machine("epyc-7r13-2s-vm")
    for keyed in (milan.latency.cross_domain_hit, milan.latency.cross_domain_hitm):
        assert keyed is not None
        assert (keyed.both, keyed.neither) == (107.6, 200.5)
        assert (keyed.requester, keyed.holder) == (None, None)  # one home node per socket
    assert [node.near_domains for node in milan.memory.home_nodes] == [
        tuple(range(6)), tuple(range(6, 12))
    ]


def test_westmere_remote_is_the_hop_weighted_average() -> None:
    """The schema has no socket distance: 3 sockets at 1 hop (341 cycles), 4 at 2 (458) [S3]."""
    wsm = load_machine("westmere-ex-8s")
    expected_ns = (3 * 341 + 4 * 458) / 7 / wsm.clock_ghz
    for keyed in (wsm.latency.remote_hitm, wsm.latency.remote_hit):
        assert keyed is not None
        for relation in HomeRelation:
            value = keyed.get(relation)
            assert value == pytest.approx(expected_ns, abs=0.5)
    assert 341 / wsm.clock_ghz < expected_ns < 458 / wsm.clock_ghz
    assert len(wsm.memory.home_nodes) == 8
    assert wsm.memory.dram_near_ns < wsm.memory.dram_far_ns


def test_load_by_path_equals_load_by_name() -> None:
    path = machines_dir() / "gold5215-2s.yaml"
    assert load_machine(path) == load_machine("gold5215-2s")
    assert load_machine(str(path)) == load_machine("gold5215-2s")


_NUMBER = re.compile(r"\d")
_CITATION = re.compile(r"\[S\d+\]|ASSUMPTION")


@pytest.mark.parametrize("name", shipped_machines())
def test_every_number_in_a_shipped_file_is_cited(name: str) -> None:
    """Each line with a number cites a source key or says ASSUMPTION (inline or just above)."""
    lines = (machines_dir() / f"{name}.yaml").read_text(encoding="utf-8").splitlines()
    section = ""
    uncited = []
    for index, line in enumerate(lines):
        value = line.split(" #", 1)[0] if not line.lstrip().startswith("#") else ""
        if value and not value.startswith((" ", "-")):
            section = value.split(":", 1)[0]
        if section in ("name", "description", "sources") or ":" not in value:
            continue
        if not _NUMBER.search(value.split(":", 1)[1]):
            continue
        block = [line]
        above = index - 1
        while above >= 0 and lines[above].lstrip().startswith("#"):
            block.append(lines[above])
            above -= 1
        if not any(_CITATION.search(text) for text in block):
            uncited.append(f"line {index + 1}: {line.strip()}")
    assert not uncited, "uncited numbers:\n" + "\n".join(uncited)


@pytest.mark.parametrize("name", shipped_machines())
def test_every_cited_key_is_in_sources(name: str) -> None:
    text = (machines_dir() / f"{name}.yaml").read_text(encoding="utf-8")
    cited = set(re.findall(r"\[(S\d+)\]", text))
    assert cited <= set(load_machine(name).sources)


# --------------------------------------------------------------------------------------------
# Bad machine files: each names its key
# --------------------------------------------------------------------------------------------


def _set(path: str, value: Any) -> Mutation:
    *parents, last = path.split(".")

    def mutate(data: dict[str, Any]) -> None:
        for part in parents:
            data = data[part]
        data[last] = value

    return mutate


def _delete(path: str) -> Mutation:
    *parents, last = path.split(".")

    def mutate(data: dict[str, Any]) -> None:
        for part in parents:
            data = data[part]
        del data[last]

    return mutate


def _rename(path: str, new: str) -> Mutation:
    *parents, last = path.split(".")

    def mutate(data: dict[str, Any]) -> None:
        for part in parents:
            data = data[part]
        data[new] = data.pop(last)

    return mutate


def _set_idle_state(index: int, key: str, value: Any) -> Mutation:
    """Set (or, with ``None``, delete) one key of the machine's ``idle.states[index]``."""
    def mutate(data: dict[str, Any]) -> None:
        state = data["idle"]["states"][index]
        if value is None:
            del state[key]
        else:
            state[key] = value

    return mutate


def _set_home_nodes(nodes: list[Any]) -> Mutation:
    def mutate(data: dict[str, Any]) -> None:
        data["memory"]["home_nodes"] = nodes

    return mutate


_KDAMOND: dict[str, Any] = {"name": "kdamond", "period": "500 ms", "cpu_share": 0.005,
                            "cpu_share_per_process": 1.0e-4}


BAD_GOLD: list[tuple[str, Mutation, str, str]] = [
    ("unknown top-level key", _set("colour", "red"), "colour", "unknown key (expected one of:"),
    ("unknown nested key", _rename("caches.l2.ways", "wayz"), "caches.l2.wayz",
     "unknown key (expected one of: size, ways, latency)"),
    ("missing top-level key", _delete("mlp"), "mlp", "missing required key"),
    ("missing nested key", _delete("latency.upgrade"), "latency.upgrade", "missing"),
    ("negative per-sharer increment", _set("latency.invalidation_per_extra_sharer", "-2 ns"),
     "latency.invalidation_per_extra_sharer", "negative"),
    ("negative size", _set("caches.l1d.size", "-32 KiB"), "caches.l1d.size", "negative"),
    ("zero size", _set("caches.l1d.size", "0 KiB"), "caches.l1d.size", "must be positive"),
    ("fractional bytes", _set("caches.l1d.size", "0.1 KiB"), "caches.l1d.size", "whole number"),
    ("ways do not divide", _set("caches.l2.ways", 12), "caches.l2.ways", "do not divide"),
    ("float ways", _set("caches.l2.ways", 16.0), "caches.l2.ways", "expected an integer"),
    ("bool ways", _set("caches.l2.ways", True), "caches.l2.ways", "expected an integer"),
    ("bad time unit", _set("caches.l2.latency", "14 parsecs"), "caches.l2.latency",
     "unknown time unit"),
    ("bare number latency", _set("caches.l2.latency", 14), "caches.l2.latency",
     "needs a unit (e.g. '48 ns' or '14 cycles'), got integer 14"),
    ("unitless string size", _set("caches.l1d.size", "32768"), "caches.l1d.size",
     "needs a unit"),
    ("bare clock", _set("clock", 2.5), "clock", "needs a unit (e.g. '2.5 GHz')"),
    ("latency order", _set("caches.l1d.latency", "100 cycles"), "caches", "must not decrease"),
    ("threads_per_core 0", _set("topology.threads_per_core", 0), "topology.threads_per_core",
     ">= 1"),
    ("string sockets", _set("topology.sockets", "2"), "topology.sockets",
     "expected an integer, got string '2'"),
    ("topology not a mapping", _set("topology", [2, 1, 10, 2]), "topology", "expected a mapping"),
    ("unknown protocol", _set("coherence.protocol", "MSI"), "coherence.protocol",
     "choose one of: MESI, MESIF, MOESI"),
    ("unknown inclusion", _set("coherence.l3_inclusion", "exclusive"), "coherence.l3_inclusion",
     "inclusive, non_inclusive, victim"),
    ("string bool", _set("virtualized", "false"), "virtualized", "expected true or false"),
    ("bad clock", _set("clock", "2.5 GHzz"), "clock", "unknown frequency unit"),
    ("sources not strings", _set("sources.S2", 42), "sources.S2", "expected a string"),
    ("remote_hitm lacks requester", _set("latency.remote_hitm", {"holder": "115.6 ns"}),
     "latency.remote_hitm.requester", "is required"),
    ("remote_hit missing", _delete("latency.remote_hit"), "latency.remote_hit", "is required"),
    ("unknown home relation", _set("latency.remote_hitm.far", "1 ns"),
     "latency.remote_hitm.far", "both, requester, holder, neither"),
    ("empty keyed latency", _set("latency.remote_hit", {}), "latency.remote_hit", "empty"),
    ("negative latency", _set("latency.smt_sibling", "-7 ns"), "latency.smt_sibling",
     "negative"),
    ("zero latency", _set("latency.local_hit", "0 ns"), "latency.local_hit", "positive"),
    ("home node with a nonexistent domain",
     _set_home_nodes([{"near_domains": [0]}, {"near_domains": [2]}]),
     "memory.home_nodes[1].near_domains", "domain 2 does not exist"),
    ("home node domain listed twice", _set_home_nodes([{"near_domains": [0, 0]}]),
     "memory.home_nodes[0].near_domains[1]", "listed twice"),
    ("home node domain not an int", _set_home_nodes([{"near_domains": ["0"]}]),
     "memory.home_nodes[0].near_domains[0]", "expected an integer"),
    ("no home nodes", _set_home_nodes([]), "memory.home_nodes", "at least one"),
    ("home nodes not a list", _set_home_nodes({"near_domains": [0]}),  # type: ignore[arg-type]
     "memory.home_nodes", "expected a list"),
    ("unknown placement policy", _set("memory.placement", {"policy": "random"}),
     "memory.placement.policy", "unknown policy"),
    ("placement key of another policy", _set("memory.placement.granularity", "4 KiB"),
     "memory.placement.granularity", "unknown key"),
    ("placement node out of range", _set("memory.placement.node", 2), "memory.placement.node",
     "not a home node"),
    ("interleave granularity", _set("memory.placement", {"policy": "interleave",
                                                          "granularity": "100 B"}),
     "memory.placement.granularity", "multiple of 64"),
    ("dram in bad unit", _set("memory.dram_latency.far", "far"), "memory.dram_latency.far",
     "cannot parse"),
    ("mlp below one", _set("mlp.stream", 0.5), "mlp.stream", ">= 1"),
    ("mlp string", _set("mlp.indirect", "4"), "mlp.indirect", "expected a number"),
    ("smt throughput above two", _set("scheduler.smt_throughput", 2.5),
     "scheduler.smt_throughput", "between 1.0 and 2.0"),
    ("high-IPC smt throughput below one", _set("scheduler.smt_throughput_high_ipc", 0.9),
     "scheduler.smt_throughput_high_ipc", "between 1.0 and 2.0"),
    ("high-IPC smt throughput a string", _set("scheduler.smt_throughput_high_ipc", "1"),
     "scheduler.smt_throughput_high_ipc", "expected a number"),
    ("time slice zero", _set("scheduler.time_slice", "0 ms"), "scheduler.time_slice",
     "positive"),
    ("null time", _set("scheduler.wakeup", None), "scheduler.wakeup", "expected a time"),
    ("unknown run-queue policy", _set("scheduler.policy", "round-robin"), "scheduler.policy",
     "unknown value 'round-robin'"),
    ("unknown first placement", _set("scheduler.first_placement", "packed"),
     "scheduler.first_placement", "unknown value 'packed'"),
    ("first placement not a string", _set("scheduler.first_placement", 1),
     "scheduler.first_placement", "expected a string"),
    ("policy not a string", _set("scheduler.policy", 3), "scheduler.policy",
     "expected a string"),
    ("negative sleeper credit", _set("scheduler.sleeper_credit", "-1 ms"),
     "scheduler.sleeper_credit", "is negative"),
    ("unknown idle key", _set("idle.cstates", []), "idle.cstates", "unknown key"),
    ("unknown wake path", _set("idle.wake", "ipi"), "idle.wake", "choose one of: mwait, hlt"),
    ("unknown governor", _set("idle.governor", "teo"), "idle.governor",
     "choose one of: menu, shallowest"),
    ("idle states not a list", _set("idle.states", {"name": "C1"}), "idle.states",
     "expected a list"),
    ("idle state without residency", _set_idle_state(0, "target_residency", None),
     "idle.states[0].target_residency", "missing required key"),
    ("negative exit latency", _set_idle_state(1, "exit_latency", "-10 us"),
     "idle.states[1].exit_latency", "negative"),
    ("unknown idle scope", _set_idle_state(2, "scope", "package"), "idle.states[2].scope",
     "choose one of: thread, core"),
    ("residencies going down", _set_idle_state(2, "target_residency", "1 us"),
     "idle.states[2].target_residency", "must not be below the state before it"),
    ("thread state after a core state", _set_idle_state(0, "scope", "core"),
     "idle.states[1].scope", "cannot follow a core-level one"),
    ("idle state named twice", _set_idle_state(1, "name", "C1"), "idle.states[1].name",
     "'C1' appears twice"),
    ("idle timer horizon zero", _set("idle.timer_horizon", "0 ms"), "idle.timer_horizon",
     "positive"),
    ("kernel thread not a mapping", _set("kernel_thread", "kdamond"), "kernel_thread",
     "expected a mapping"),
    ("kernel thread unknown key", _set("kernel_thread", {**_KDAMOND, "cpu": 0.1}),
     "kernel_thread.cpu", "unknown key"),
    ("kernel thread missing share", _set("kernel_thread", {
        key: value for key, value in _KDAMOND.items() if key != "cpu_share"}),
     "kernel_thread.cpu_share", "missing required key"),
    ("kernel thread negative share", _set("kernel_thread", {**_KDAMOND, "cpu_share": -0.1}),
     "kernel_thread.cpu_share", "negative"),
    ("kernel thread share above one", _set("kernel_thread", {**_KDAMOND, "cpu_share": 1.5}),
     "kernel_thread.cpu_share", "0 to 1"),
    ("kernel thread negative per process",
     _set("kernel_thread", {**_KDAMOND, "cpu_share_per_process": -1.0e-4}),
     "kernel_thread.cpu_share_per_process", "negative"),
    ("kernel thread period without unit", _set("kernel_thread", {**_KDAMOND, "period": 500}),
     "kernel_thread.period", "needs a unit"),
    ("kernel thread zero period", _set("kernel_thread", {**_KDAMOND, "period": "0 ms"}),
     "kernel_thread.period", "positive"),
    ("kernel thread empty name", _set("kernel_thread", {**_KDAMOND, "name": ""}),
     "kernel_thread.name", "must not be empty"),
    ("kernel thread share as text", _set("kernel_thread", {**_KDAMOND, "cpu_share": "5 %"}),
     "kernel_thread.cpu_share", "expected a number"),
]


@pytest.mark.parametrize(
    ("mutation", "key", "fragment"),
    [pytest.param(mutation, key, fragment, id=label)
     for label, mutation, key, fragment in BAD_GOLD],
)
def test_bad_machine_files(
    gold_data: dict[str, Any], write_yaml: WriteYaml, mutation: Mutation, key: str, fragment: str
) -> None:
    mutation(gold_data)
    path = write_yaml(gold_data)
    with pytest.raises(ConfigError) as info:
        load_machine(path)
    error = info.value
    assert error.key == key
    assert error.source == str(path)
    assert fragment in error.message
    assert str(error).startswith(f"{path}: {key}: ")


def test_machine_from_dict_without_source(gold_data: dict[str, Any]) -> None:
    gold_data["caches"]["l2"]["ways"] = 12
    with pytest.raises(ConfigError) as info:
        machine_from_dict(gold_data)
    assert info.value.source is None
    assert str(info.value).startswith("caches.l2.ways: ")


def test_machine_from_dict_attaches_source(gold_data: dict[str, Any]) -> None:
    gold_data["topology"]["threads_per_core"] = 0
    with pytest.raises(ConfigError, match=r"^here\.yaml: topology\.threads_per_core: "):
        machine_from_dict(gold_data, source="here.yaml")


def test_user_machine_may_have_any_name(gold_data: dict[str, Any], write_yaml: WriteYaml) -> None:
    gold_data["name"] = "my-box"
    assert load_machine(write_yaml(gold_data)).name == "my-box"


def test_optional_keys_default(gold_data: dict[str, Any], write_yaml: WriteYaml) -> None:
    del gold_data["sources"]
    del gold_data["scheduler"]["ipi_exit"]
    del gold_data["scheduler"]["smt_throughput"]
    gold_data["scheduler"].pop("smt_throughput_high_ipc", None)
    del gold_data["latency"]["invalidation_per_extra_sharer"]
    config = load_machine(write_yaml(gold_data))
    assert config.sources == {}
    assert config.latency.invalidation_per_extra_sharer_ns == 0  # fully parallel
    assert config.scheduler.ipi_exit_ns == 0
    assert config.scheduler.smt_throughput == 1.0
    assert config.scheduler.smt_throughput_high_ipc is None  # as ordinary code
    assert config.scheduler.high_ipc_smt_throughput == 1.0
    assert config.scheduler.policy == "cfs"
    assert config.scheduler.sleeper_credit_ns == 12e6


def test_kernel_thread_section(gold_data: dict[str, Any], write_yaml: WriteYaml) -> None:
    assert load_machine(write_yaml(gold_data)).kernel_thread is None  # absent: none
    gold_data["kernel_thread"] = dict(_KDAMOND)
    thread = load_machine(write_yaml(gold_data)).kernel_thread
    assert thread is not None
    assert (thread.name, thread.period_ns) == ("kdamond", 500e6)
    assert thread.share(0) == 0.005
    assert thread.share(2500) == pytest.approx(0.255)
    assert thread.share(100_000) == 1.0  # at most one CPU


def test_run_queue_policy_and_sleeper_credit(gold_data: dict[str, Any],
                                            write_yaml: WriteYaml) -> None:
    gold_data["scheduler"]["policy"] = "fifo"
    gold_data["scheduler"]["sleeper_credit"] = "6 ms"
    config = load_machine(write_yaml(gold_data))
    assert config.scheduler.policy == "fifo"
    assert config.scheduler.sleeper_credit_ns == 6e6


def test_scalar_keyed_latency_is_uniform(gold_data: dict[str, Any], write_yaml: WriteYaml) -> None:
    gold_data["latency"]["remote_hitm"] = "140 ns"
    keyed = load_machine(write_yaml(gold_data)).latency.remote_hitm
    assert keyed is not None
    assert all(keyed.get(relation) == 140 for relation in HomeRelation)


def test_cross_domain_latencies_required_on_ccx_machine(
    tr_data: dict[str, Any], write_yaml: WriteYaml
) -> None:
    del tr_data["latency"]["cross_domain_hitm"]["neither"]
    with pytest.raises(ConfigError) as info:
        load_machine(write_yaml(tr_data))
    assert info.value.key == "latency.cross_domain_hitm.neither"


def test_cycles_anywhere_convert_with_clock(
    gold_data: dict[str, Any], write_yaml: WriteYaml
) -> None:
    gold_data["clock"] = "2 GHz"
    gold_data["memory"]["dram_latency"]["near"] = "200 cycles"
    gold_data["scheduler"]["wakeup"] = "10000 cycles"
    config = load_machine(write_yaml(gold_data))
    assert config.memory.dram_near_ns == 100
    assert config.scheduler.wakeup_ns == 5000
    assert config.l2.latency_ns == 7


# --------------------------------------------------------------------------------------------
# Files that are not machine documents
# --------------------------------------------------------------------------------------------


def test_missing_file_lists_shipped_machines(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError) as info:
        load_machine(path)
    message = str(info.value)
    assert f"no such machine file or shipped machine '{path}'" in message
    assert "gold5215-2s" in message
    assert "threadripper-3990x" in message


def test_unknown_shipped_name_lists_valid_names() -> None:
    with pytest.raises(ConfigError, match=r"shipped machine 'gold5216' \(shipped: .*gold5215-2s"):
        load_machine("gold5216")


def test_malformed_yaml_names_file_and_line(write_yaml: WriteYaml) -> None:
    path = write_yaml("name: x\ntopology: {sockets: 2\ncaches: [\n")
    with pytest.raises(ConfigError) as info:
        load_machine(path)
    assert info.value.source == str(path)
    assert re.search(r"malformed YAML at line \d+, column \d+", info.value.message)


def test_malformed_yaml_line_number(write_yaml: WriteYaml) -> None:
    path = write_yaml("name: x\ndescription: y\nclock: : 2\n")
    with pytest.raises(ConfigError, match="at line 3,"):
        load_machine(path)


def test_duplicate_key_is_an_error(write_yaml: WriteYaml) -> None:
    path = write_yaml("caches:\n  l2:\n    ways: 16\n    ways: 8\n")
    with pytest.raises(ConfigError) as info:
        load_machine(path)
    assert info.value.key == "caches.l2.ways"
    assert "duplicate key (line 4)" in info.value.message


@pytest.mark.parametrize(
    ("text", "fragment"),
    [("", "empty"), ("- 1\n- 2\n", "top level must be a mapping, got a list"),
     ("just text\n", "top level must be a mapping, got string")],
)
def test_top_level_must_be_a_mapping(write_yaml: WriteYaml, text: str, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment) as info:
        load_machine(write_yaml(text))
    assert info.value.key == ""


def test_unsafe_tags_are_rejected(write_yaml: WriteYaml) -> None:
    path = write_yaml("name: !!python/object/apply:os.system ['true']\n")
    with pytest.raises(ConfigError, match="malformed YAML"):
        load_machine(path)


def test_directory_is_not_a_machine(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a directory"):
        load_machine(str(tmp_path) + "/")


def test_parse_yaml_accepts_aliases_without_false_duplicates() -> None:
    data = parse_yaml("a: &x {k: 1}\nb: *x\nc: {<<: *x, j: 2}\n")
    assert data == {"a": {"k": 1}, "b": {"k": 1}, "c": {"k": 1, "j": 2}}


def test_shipped_machine_name_must_match_file(
    gold_data: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(machine_loader, "machines_dir", lambda: tmp_path)
    (tmp_path / "other.yaml").write_text(yaml.safe_dump(gold_data), encoding="utf-8")
    assert shipped_machines() == ["other"]
    with pytest.raises(ConfigError) as info:
        load_machine("other")
    assert info.value.key == "name"
    assert "'other'" in info.value.message


def test_the_gold_5215_idle_states_are_intel_idles_skx_table() -> None:
    idle = load_machine("gold5215-2s").idle
    assert idle is not None
    assert (idle.wake, idle.governor) == ("mwait", "menu")
    table = [(s.name, s.exit_latency_ns, s.target_residency_ns, s.wake_latency_ns, s.core_scope)
             for s in idle.states]
    assert table == [("C1", 2_000, 2_000, 2_000, False), ("C1E", 10_000, 20_000, 4_000, False),
                     ("C6", 133_000, 600_000, 92_000, True)]


# Virtual machines whose guest controls the processor's C-states (AWS's full-host sizes): their
# idle vCPUs wait in MWAIT as on bare metal; every other virtual machine halts them.
MWAIT_GUESTS = {"xeon-8375c-2s-vm", "epyc-7r13-2s-vm"}


@pytest.mark.parametrize("name", shipped_machines())
def test_every_shipped_machine_has_idle_states_and_vms_halt(name: str) -> None:
    config = load_machine(name)
    assert config.idle is not None
    assert config.idle.states
    if config.virtualized:
        assert config.idle.wake == ("mwait" if name in MWAIT_GUESTS else "hlt")


def test_a_machine_file_without_idle_states_has_none(gold_data: dict[str, Any],
                                                     write_yaml: WriteYaml) -> None:
    del gold_data["idle"]
    assert load_machine(write_yaml(gold_data)).idle is None


def test_the_line_service_section_is_read_and_checked() -> None:
    config = load_machine("gold5215-2s", ["line_service.rule=home"])
    assert config.line_service.home
    assert config.line_service.owner_window == 0.15
    assert config.line_service.transfer_overlap == 0.1
    assert config.line_service.service_ns[0] == (0.0, 0.0, 300.0)  # read_modified
    assert load_machine("gold5215-2s").line_service.rule == "home"  # shipped: home
    assert config.line_service.local_batch == 1  # shipped: first come, first served
    assert load_machine("gold5215-2s", ["line_service.local_batch=3"]).line_service.local_batch == 3
    for override, key in (("line_service.rule=lifo", "line_service.rule"),
                          ("line_service.local_batch=0", "line_service.local_batch"),
                          ("line_service.local_batch=2.5", "line_service.local_batch"),
                          ("line_service.owner_window=2", "line_service.owner_window"),
                          ("line_service.transfer_overlap=1", "line_service.transfer_overlap"),
                          ("line_service.transfer_overlap=x", "line_service.transfer_overlap"),
                          ("line_service.service.read_modified.remote=300",
                           "line_service.service.read_modified.remote"),
                          ("line_service.service.writes={local: 1 ns}",
                           "line_service.service.writes"),
                          ("line_service.speed=1", "line_service.speed")):
        with pytest.raises(ConfigError) as error:
            load_machine("gold5215-2s", [override])
        assert error.value.key == key


def test_a_reference_names_a_file_by_a_slash_or_a_yaml_suffix() -> None:
    assert not names_a_file("gold5215-2s")
    for reference in ("configs/measurements/kvm-epyc-2vcpu/host.yaml", "host.yaml", "my.yml",
                      "/abs/host", "./host"):
        assert names_a_file(reference), reference
    # the reference a file names loads like a shipped one
    assert load_machine(str(machines_dir() / "gold5215-2s.yaml")).name == "gold5215-2s"


def test_first_placement_spreads_by_default_and_lowest_is_the_ablation() -> None:
    assert load_machine("azure-f72s-v2").scheduler.first_placement == "spread"
    assert load_machine("azure-f72s-v2", ["scheduler.first_placement=lowest"]
                        ).scheduler.first_placement == "lowest"
    assert load_machine("azure-f72s-v2", ["scheduler.first_placement=spread_all"]
                        ).scheduler.first_placement == "spread_all"


def test_epoll_sync_wakeup_is_a_kernel_fact_of_the_scheduler_section() -> None:
    # the 2020 runs' kernels woke an epoll waiter without the synchronous hint
    for name in ("gold5215-2s", "platinum8168-2s-vm", "azure-f72s-v2"):
        assert load_machine(name).scheduler.epoll_sync_wakeup is False
    # the project's machine ran Linux 6.18
    host = load_machine("configs/measurements/kvm-epyc-2vcpu/host.yaml")
    assert host.scheduler.epoll_sync_wakeup is True
    assert load_machine("gold5215-2s", ["scheduler.epoll_sync_wakeup=true"]
                        ).scheduler.epoll_sync_wakeup is True
    for value in ("1", "yes-ish", "[true]"):
        with pytest.raises(ConfigError) as error:
            load_machine("gold5215-2s", [f"scheduler.epoll_sync_wakeup={value}"])
        assert error.value.key == "scheduler.epoll_sync_wakeup"
