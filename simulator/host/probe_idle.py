"""How a virtual machine's idle vCPUs wait, read from Linux: the machine file's ``idle:`` section.

A guest's vCPUs do not enter the host's C-states: an idle vCPU either polls (busy-waits for work,
so a waker needs no interrupt) or halts (HLT, which exits to the hypervisor; waking it is an IPI
that exits too, and the host must re-enter the vCPU). Linux says which in sysfs:

* ``/sys/devices/system/cpu/cpuidle/current_driver``: ``haltpoll`` is KVM's guest halt polling
  (Linux ``drivers/cpuidle/cpuidle-haltpoll.c``, ``Documentation/virt/guest-halt-polling.rst``):
  an idle vCPU polls for up to ``guest_halt_poll_ns`` (its ``haltpoll`` governor grows and
  shrinks the window), then halts; any other driver (or none) in a guest halts at once;
* ``/sys/module/haltpoll/parameters/guest_halt_poll_ns``: the polling window (0: never polls);
* ``/sys/devices/system/cpu/cpu<N>/cpuidle/state1/{latency,residency}``: the halt state as the
  driver declares it.

Left out: the host's own halt polling (``halt_poll_ns`` of KVM on the host, invisible to the
guest), the haltpoll governor's adaptive window (the menu governor against a fixed window stands
for it) and a guest given MONITOR/MWAIT (then it idles as bare metal does).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from simulator.host.procfs import kernel_text

__all__ = ["GuestIdle", "MeasuredWakeup", "guest_idle", "guest_idle_lines"]

IPI_EXIT_US = 5.0
"""Extra cost of waking a halted vCPU (µs): see the comment written with it."""


@dataclass(frozen=True, slots=True)
class GuestIdle:
    """What a guest publishes about its idle vCPUs."""

    driver: str
    """``/sys/devices/system/cpu/cpuidle/current_driver`` (``none`` when absent)."""
    halt_poll_ns: int
    """``guest_halt_poll_ns`` of the ``haltpoll`` driver; 0 when the vCPU never polls."""
    halt_latency_us: float
    """The halt state's declared exit latency (µs; 1 for ``haltpoll``)."""


@dataclass(frozen=True, slots=True)
class MeasuredWakeup:
    """A wake-up of an idle vCPU measured on the host.

    ``snapsim machine probe --measure-wakeup``: a pipe ping-pong, :mod:`simulator.host.wakeup`.
    """

    wakeup_us: float
    """Half the difference of the two round trips: the extra cost of one wake-up (µs)."""
    same_cpu_us: float
    """The ping-pong's round trip with both processes on one vCPU (µs)."""
    cross_cpu_us: float
    """Its round trip with one process on each of two vCPUs (µs)."""


def _number(path: Path, default: float) -> float:
    text = kernel_text(path)
    try:
        return float(text) if text is not None else default
    except ValueError:
        return default


def guest_idle(root: Path, cpu: int) -> GuestIdle:
    """The idle behaviour of a guest's vCPUs below ``root`` (``/`` on a real host).

    Missing files mean the defaults of a guest without a cpuidle driver: it halts at once.
    """
    driver = kernel_text(root / "sys/devices/system/cpu/cpuidle/current_driver") or "none"
    poll_ns = 0
    if driver == "haltpoll":
        poll_ns = int(_number(root / "sys/module/haltpoll/parameters/guest_halt_poll_ns", 0.0))
    halt_latency_us = _number(root / f"sys/devices/system/cpu/cpu{cpu}/cpuidle/state1/latency", 1.0)
    return GuestIdle(driver=driver, halt_poll_ns=max(poll_ns, 0), halt_latency_us=halt_latency_us)


def guest_idle_lines(idle: GuestIdle, wakeup: MeasuredWakeup | None = None) -> list[str]:
    """The machine file's ``scheduler.ipi_exit`` (indented) and ``idle:`` lines for a guest.

    ``ipi_exit`` is the measured one when ``wakeup`` is given, else the assumption.
    """
    host = "measured on this host"
    polls = idle.halt_poll_ns > 0
    lines = _measured_ipi_exit(wakeup) if wakeup is not None else [
        "  # ASSUMPTION, range 1.5-15 us: waking a halted vCPU is an IPI that exits to the",
        "  # hypervisor (VM exit on the sender), which wakes and re-enters the target vCPU.",
        "  # Published KVM figures: an IPI to a running (not halted) vCPU takes 4,338 cycles",
        "  # (x2APIC) from send to handler without IPI virtualization, and 1.46 us per IPI in a",
        "  # guest with idle=poll (Zeng Guang and Gao Chao, '[PATCH] IPI virtualization support",
        "  # for VM', kvm mailing list, 2021-2022, kvm-unit-tests vmexit/ipi and Y. Norov's",
        "  # ipi_benchmark); a thread wake-up in a KVM guest measured 13-18.5 us on average",
        "  # (TonsnakeLin/CppProgramming README on GitHub, unknown host: low quality). KVM's host",
        "  # halt polling (halt_poll_ns, 200,000 ns by default: KVM_HALT_POLL_NS_DEFAULT in Linux",
        "  # arch/x86/include/asm/kvm_host.h) shortens the re-entry when the host CPU is free.",
        "  # 5 us: the middle of that range; measure it instead with",
        "  # snapsim machine probe --measure-wakeup.",
        f"  ipi_exit: {IPI_EXIT_US:g} us",
    ]
    lines += [
        "idle:",
        f"  # {host}: cpuidle driver {idle.driver}"
        + (f", guest_halt_poll_ns = {idle.halt_poll_ns}" if idle.driver == "haltpoll" else "")
        + ". A vCPU does not",
        "  # enter the host's C-states: it polls or halts (HLT exits to the hypervisor).",
    ]
    if polls:
        lines += [
            "  # KVM guest halt polling (Linux drivers/cpuidle/cpuidle-haltpoll.c and",
            "  # Documentation/virt/guest-halt-polling.rst): an idle vCPU polls for up to",
            "  # guest_halt_poll_ns, and a waker then sends no IPI; after the window it halts and",
            "  # waking it costs scheduler.ipi_exit. The menu governor with the halt state's",
            "  # target residency at the window stands for the haltpoll governor (which grows",
            "  # and shrinks the window adaptively): it polls when it predicts a shorter idle.",
            "  wake: hlt",
            "  governor: menu",
        ]
    else:
        reason = ("guest_halt_poll_ns is 0, so the haltpoll driver never polls"
                  if idle.driver == "haltpoll" else
                  f"the {idle.driver} driver of a guest has no halt polling")
        lines += [
            f"  # {reason}: every idle vCPU",
            "  # halts (HLT), and each wake-up of one is an IPI that costs scheduler.ipi_exit.",
            "  wake: hlt",
            "  governor: shallowest",
        ]
    residency_ns = idle.halt_poll_ns if polls else 0
    lines += [
        "  states:",
        f"    # {host}: the halt state's declared exit latency ({idle.halt_latency_us:g} us, sysfs"
        " cpuidle state1);",
        "    # wake_latency 0: leaving HLT is the hypervisor's work, in scheduler.ipi_exit.",
        f"    - {{name: HLT, exit_latency: {idle.halt_latency_us:g} us, target_residency: "
        f"{residency_ns} ns, wake_latency: 0 us}}",
    ]
    return lines


def _measured_ipi_exit(wakeup: MeasuredWakeup) -> list[str]:
    """``scheduler.ipi_exit`` from the host's ping-pong, with how it was measured."""
    return [
        "  # measured on this host (machine probe --measure-wakeup, or measure): a pipe ping-pong",
        f"  # between two processes took {wakeup.same_cpu_us:.1f} us per round trip on one vCPU",
        f"  # (two context switches) and {wakeup.cross_cpu_us:.1f} us on two (two wake-ups of an",
        "  # idle vCPU by the other: IPI, halt exit, re-entry); half the difference is the",
        "  # extra cost of one wake-up of a halted vCPU. Measure on a quiet machine: a busy",
        "  # vCPU does not halt.",
        f"  ipi_exit: {wakeup.wakeup_us:.1f} us",
    ]
