/**
 * The built proxy, started for the memory run with `--expose-gc` and an IPC channel: on a `gc`
 * message it runs two full collections and answers with `process.memoryUsage()`, so the bench can
 * tell retained memory (what a leak would grow) from garbage and from pages the allocator keeps.
 * Nothing else differs from `dist/src/bin/flags-proxy.js`, which it loads.
 */
import '../src/bin/flags-proxy';

const gc = (globalThis as { gc?: () => void }).gc;
process.on('message', (message: unknown) => {
  if (message !== 'gc' || !gc) return;
  gc();
  gc();
  process.send?.(process.memoryUsage());
});
process.on('disconnect', () => process.kill(process.pid, 'SIGTERM'));
