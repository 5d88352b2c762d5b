// unleash-client leaves its timers ref'd only when NODE_ENV is 'test' (and its metrics timer can be
// replaced without being cleared), which keeps jest alive for a whole metrics interval after a
// clean close(). The proxy runs with unref'd SDK timers in production; test that behaviour.
process.env.NODE_ENV = 'production-like-test';
