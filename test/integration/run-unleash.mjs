/* global process, URL */
// Starts an open-source unleash-server (from npm) on a given database and port; used by the
// integration tests as a child process, because unleash-server is an ES module.
// Environment: UNLEASH_IT_DB (postgres URL), UNLEASH_IT_PORT, UNLEASH_IT_ADMIN_TOKEN.
import { start } from 'unleash-server';

const db = new URL(process.env.UNLEASH_IT_DB);
const quiet = () => ({ debug() {}, info() {}, warn() {}, error() {}, fatal() {} });
const unleash = await start({
  db: {
    host: db.hostname,
    port: Number(db.port || 5432),
    user: decodeURIComponent(db.username),
    password: decodeURIComponent(db.password),
    database: db.pathname.slice(1),
    ssl: false,
  },
  server: { port: Number(process.env.UNLEASH_IT_PORT), host: '127.0.0.1' },
  authentication: {
    initApiTokens: [
      {
        secret: process.env.UNLEASH_IT_ADMIN_TOKEN,
        tokenName: 'admin',
        type: 'admin',
        environment: '*',
        projects: ['*'],
      },
    ],
  },
  getLogger: quiet,
  disableLegacyFeaturesApi: false,
  versionCheck: { enable: false },
  // flush token caches quickly in tests? (kept as Unleash's defaults)
});
process.send?.('listening');
process.on('message', async (msg) => {
  if (msg === 'stop') {
    await unleash.stop();
    process.exit(0);
  }
});
