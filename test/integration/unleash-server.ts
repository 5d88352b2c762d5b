import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import path from 'node:path';
import { Client } from 'pg';

/** The PostgreSQL the tests may create databases on (CI starts one). */
export const POSTGRES_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function onDatabase(sql: string): Promise<void> {
  const client = new Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/**
 * An open-source unleash-server from npm, run as a child process (it is an ES module) on a fresh
 * database of its own; `restart()` starts it again on the same database and port.
 */
export class UnleashServer {
  readonly adminToken = `*:*.it-admin-${randomBytes(8).toString('hex')}`;
  private child: ChildProcess | undefined;
  private port = 0;
  private readonly database = `unleash_it_${randomBytes(6).toString('hex')}`;

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<this> {
    await onDatabase(`CREATE DATABASE ${this.database}`);
    this.port = await freePort();
    await this.launch();
    return this;
  }

  private async launch(): Promise<void> {
    const db = new URL(POSTGRES_URL);
    db.pathname = `/${this.database}`;
    const child = fork(path.join(__dirname, 'run-unleash.mjs'), [], {
      env: {
        ...process.env,
        NODE_ENV: 'production',
        UNLEASH_IT_DB: db.toString(),
        UNLEASH_IT_PORT: String(this.port),
        UNLEASH_IT_ADMIN_TOKEN: this.adminToken,
      },
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    this.child = child;
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString('utf8')).slice(-4000);
    });
    await new Promise<void>((resolve, reject) => {
      child.once('message', () => resolve());
      child.once('exit', (code) => reject(new Error(`unleash-server exited (${code}): ${stderr}`)));
    });
  }

  /** Stops the server (its token cache with it) and starts it again on the same database and port. */
  async restart(): Promise<void> {
    await this.kill();
    await this.launch();
  }

  private async kill(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGKILL');
    await exited;
  }

  async stop(): Promise<void> {
    await this.kill();
    await onDatabase(`DROP DATABASE IF EXISTS ${this.database} WITH (FORCE)`).catch(() => undefined);
  }

  /** A call of the admin API; its JSON answer. */
  async admin(method: string, apiPath: string, body?: unknown): Promise<unknown> {
    const res = await fetch(`${this.url}/api/admin${apiPath}`, {
      method,
      headers: { Authorization: this.adminToken, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${method} ${apiPath}: HTTP ${res.status} ${text}`);
    return text ? (JSON.parse(text) as unknown) : undefined;
  }

  /** Creates an API token and returns its secret. */
  async token(type: 'frontend' | 'backend', environment: string, projects = ['*']): Promise<string> {
    const created = (await this.admin('POST', '/api-tokens', {
      tokenName: `it-${type}-${environment}-${randomBytes(3).toString('hex')}`,
      type,
      environment,
      projects,
    })) as { secret: string };
    return created.secret;
  }

  /** Creates a flag in the default project, on (100 % rollout) in each of `environments`. */
  async flag(name: string, environments: readonly string[]): Promise<void> {
    await this.admin('POST', '/projects/default/features', { name });
    for (const env of environments) {
      await this.admin('POST', `/projects/default/features/${name}/environments/${env}/strategies`, {
        name: 'flexibleRollout',
        parameters: { rollout: '100', stickiness: 'default', groupId: name },
      });
      await this.admin('POST', `/projects/default/features/${name}/environments/${env}/on`);
    }
  }
}
