"""Placement of hardware threads: sockets → L3 domains → cores → SMT threads.

Threads, cores, domains and sockets are numbered densely and hierarchically (thread ``t`` belongs
to core ``t // threads_per_core``; core ``c`` to domain ``c // cores_per_domain``; ...). Their
human names are dotted scopes, local at each level: ``s1.d0.c3.t1`` is thread 1 of core 3 of
domain 0 of socket 1. The topology is pure data with NumPy lookup arrays for the fast kernels.
It does not model the OS's CPU numbering.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from simulator.config.machine import MachineConfig, TopologyConfig
from simulator.types import Int32Array

__all__ = ["Locality", "Topology"]

_THREAD_ID = re.compile(r"^s(\d+)\.d(\d+)\.c(\d+)\.t(\d+)$")


class Locality(IntEnum):
    """Distance between two hardware threads, nearest first.

    A test seam: the tests state the numbering of each shipped topology with it, while the
    simulator itself compares the lookup arrays (the coherence kernels need no enum).
    """

    SAME_THREAD = 0
    SMT_SIBLING = 1
    SAME_DOMAIN = 2
    SAME_SOCKET = 3
    REMOTE = 4


@dataclass(frozen=True, slots=True)
class Topology:
    """Dense numbering and lookups of a uniform machine tree."""

    config: TopologyConfig
    thread_core: Int32Array
    core_domain: Int32Array
    domain_socket: Int32Array

    @classmethod
    def from_config(cls, config: TopologyConfig | MachineConfig) -> Topology:
        """Build the topology of a machine (or of a bare topology config)."""
        topo = config.topology if isinstance(config, MachineConfig) else config
        n_domains = topo.sockets * topo.domains_per_socket
        n_cores = n_domains * topo.cores_per_domain
        n_threads = n_cores * topo.threads_per_core
        return cls(
            config=topo,
            thread_core=(np.arange(n_threads, dtype=np.int32) // topo.threads_per_core),
            core_domain=(np.arange(n_cores, dtype=np.int32) // topo.cores_per_domain),
            domain_socket=(np.arange(n_domains, dtype=np.int32) // topo.domains_per_socket),
        )

    @property
    def n_threads(self) -> int:
        """Number of hardware threads."""
        return len(self.thread_core)

    @property
    def n_cores(self) -> int:
        """Number of cores."""
        return len(self.core_domain)

    @property
    def n_domains(self) -> int:
        """Number of L3 domains."""
        return len(self.domain_socket)

    @property
    def n_sockets(self) -> int:
        """Number of sockets."""
        return self.config.sockets

    def core_of(self, thread: int) -> int:
        """Core of a hardware thread."""
        return int(self.thread_core[thread])

    def domain_of_core(self, core: int) -> int:
        """L3 domain of a core."""
        return int(self.core_domain[core])

    def socket_of_domain(self, domain: int) -> int:
        """Socket of an L3 domain."""
        return int(self.domain_socket[domain])

    def domain_of(self, thread: int) -> int:
        """L3 domain of a hardware thread."""
        return self.domain_of_core(self.core_of(thread))

    def socket_of(self, thread: int) -> int:
        """Socket of a hardware thread."""
        return self.socket_of_domain(self.domain_of(thread))

    def threads_of_core(self, core: int) -> range:
        """Hardware threads of a core."""
        per = self.config.threads_per_core
        return range(core * per, (core + 1) * per)

    def siblings(self, thread: int) -> tuple[int, ...]:
        """The other hardware threads of the same core."""
        return tuple(t for t in self.threads_of_core(self.core_of(thread)) if t != thread)

    def locality(self, a: int, b: int) -> Locality:
        """How far apart threads ``a`` and ``b`` are (a test seam, see :class:`Locality`)."""
        if a == b:
            return Locality.SAME_THREAD
        core_a, core_b = self.core_of(a), self.core_of(b)
        if core_a == core_b:
            return Locality.SMT_SIBLING
        dom_a, dom_b = self.domain_of_core(core_a), self.domain_of_core(core_b)
        if dom_a == dom_b:
            return Locality.SAME_DOMAIN
        if self.socket_of_domain(dom_a) == self.socket_of_domain(dom_b):
            return Locality.SAME_SOCKET
        return Locality.REMOTE

    def thread_name(self, thread: int) -> str:
        """Dotted scope of a hardware thread, e.g. ``"s1.d0.c3.t1"``."""
        topo = self.config
        if not 0 <= thread < self.n_threads:
            raise ValueError(f"thread {thread} does not exist (0..{self.n_threads - 1})")
        k = thread % topo.threads_per_core
        core = thread // topo.threads_per_core
        c = core % topo.cores_per_domain
        domain = core // topo.cores_per_domain
        d = domain % topo.domains_per_socket
        s = domain // topo.domains_per_socket
        return f"s{s}.d{d}.c{c}.t{k}"

    def thread_by_name(self, name: str) -> int:
        """Inverse of :meth:`thread_name`.

        Raises:
            ValueError: malformed name or an index out of range.
        """
        match = _THREAD_ID.match(name)
        if match is None:
            raise ValueError(f"malformed thread id {name!r} (expected e.g. 's0.d0.c3.t1')")
        s, d, c, k = (int(g) for g in match.groups())
        topo = self.config
        limits = (topo.sockets, topo.domains_per_socket, topo.cores_per_domain,
                  topo.threads_per_core)
        if any(not 0 <= v < n for v, n in zip((s, d, c, k), limits, strict=True)):
            raise ValueError(f"thread id {name!r} is outside this machine")
        domain = s * topo.domains_per_socket + d
        core = domain * topo.cores_per_domain + c
        return core * topo.threads_per_core + k
