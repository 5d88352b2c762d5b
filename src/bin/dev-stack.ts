#!/usr/bin/env node
/**
 * `npm run dev`: flags-server on the embedded database with the example flags, and the proxy
 * pointed at it. One signal handler for both: the first SIGINT/SIGTERM stops the proxy, then the
 * flag server, then exits; a second one exits at once.
 */
import { ConfigError } from '../common/config/resolve';
import { devStackBanner, startDevStack } from '../dev/stack';
import { FeaturesFileError } from '../server/features/feature-source';

function problemsOf(err: unknown): string[] {
  if (err instanceof ConfigError) return err.problems;
  if (err instanceof FeaturesFileError) return [err.message];
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'EADDRINUSE') {
    return [
      `${err instanceof Error ? err.message : String(err)}; choose other ports with PORT=<proxy port> FLAGS_SERVER_PORT=<server port> npm run dev`,
    ];
  }
  return [err instanceof Error ? (err.stack ?? err.message) : String(err)];
}

async function main(): Promise<void> {
  const stack = await startDevStack(process.env);
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      process.stderr.write(`dev stack: ${signal} received again; exiting now\n`);
      process.exit(1);
    }
    stopping = true;
    process.stdout.write(`dev stack: ${signal} received; stopping the proxy, then flags-server\n`);
    stack.close().then(
      () => {
        process.stdout.write('dev stack: stopped\n');
        process.exit(0);
      },
      (err: unknown) => {
        for (const line of problemsOf(err))
          process.stderr.write(`dev stack: error while stopping: ${line}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.stdout.write(devStackBanner(stack));
}

main().catch((err: unknown) => {
  for (const line of problemsOf(err)) process.stderr.write(`dev stack: cannot start: ${line}\n`);
  process.exit(1);
});
