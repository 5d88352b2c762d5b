import { readdirSync, readFileSync } from 'node:fs';

/**
 * CPU nanoseconds every thread of process `pid` has run so far (`/proc/<pid>/task/*\/schedstat`,
 * Linux): the main thread, V8's and libuv's helpers alike, at nanosecond resolution.
 */
export function cpuNanos(pid: number): number {
  let ns = 0;
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // a thread that ended meanwhile
    }
  }
  return ns;
}
