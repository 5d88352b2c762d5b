import { readFileSync } from 'node:fs';

const read = (file: string): string | undefined => {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return undefined;
  }
};

/**
 * A note for the bench's header when this machine's idle CPUs halt at once (a VM whose cpuidle
 * driver is `haltpoll` with `guest_halt_poll_ns` 0): waking a sleeping process on another vCPU
 * then takes a round trip through the hypervisor, which a closed-loop load generator on the same
 * machine charges to the slower server on every response (docs/performance.md, "The socket
 * write, seen from the kernel"). Undefined elsewhere.
 */
export function hostNote(): string | undefined {
  const driver = read('/sys/devices/system/cpu/cpuidle/current_driver');
  const pollNs = read('/sys/module/haltpoll/parameters/guest_halt_poll_ns');
  if (driver !== 'haltpoll' || pollNs === undefined) return undefined;
  return Number(pollNs) === 0
    ? 'idle vCPUs halt at once (haltpoll, guest_halt_poll_ns=0): each wake-up of the load generator costs the slower server a hypervisor round trip'
    : `idle vCPUs poll ${Number(pollNs) / 1000} µs before halting (haltpoll)`;
}
