// graphile-worker as a benchmark peer of `trellis-bench --depth` (the hot-path issue): the same
// no-op jobs at the same depth on the same server, with its defaults and with the settings of
// its own performance test (docs "Performance": 24 concurrent jobs, a pool of 25, a local
// queue of 500, completion and failure batching with no delay).
//
//   node peer.mjs add <database url> <jobs>          install its schema, queue <jobs> no-ops
//   node peer.mjs work <database url> default|batched  run a worker until SIGTERM
import { Logger, run, runMigrations } from "graphile-worker";
import pg from "pg";

const [, , cmd, connectionString, arg] = process.argv;

if (cmd === "add") {
  const jobs = Number(arg);
  await runMigrations({ connectionString, logger: quiet() });
  const client = new pg.Client({ connectionString });
  await client.connect();
  // as its perfTest queues them: one add_jobs call per batch of specs
  for (let done = 0; done < jobs; done += 10000) {
    const n = Math.min(10000, jobs - done);
    await client.query(
      `SELECT graphile_worker.add_jobs(array(
         SELECT json_populate_record(null::graphile_worker.job_spec,
                json_build_object('identifier', 'noop', 'payload', json_build_object('i', i)))
         FROM generate_series(1, $1) i))`,
      [n],
    );
  }
  await client.end();
} else if (cmd === "work") {
  const batched = arg === "batched";
  const worker = batched
    ? {
        concurrentJobs: 24,
        maxPoolSize: 25,
        localQueue: { size: 500 },
        completeJobBatchDelay: 0,
        failJobBatchDelay: 0,
      }
    : {};
  const runner = await run({
    connectionString,
    noHandleSignals: true,
    logger: quiet(),
    taskList: { noop: async () => {} },
    preset: { worker },
  });
  process.on("SIGTERM", () => runner.stop().then(() => process.exit(0)));
  await runner.promise;
} else {
  console.error("usage: peer.mjs add <url> <jobs> | work <url> default|batched");
  process.exit(2);
}

function quiet() {
  // errors only: the bench reads the queue, not the logs
  return new Logger(() => (level, message) => {
    if (level === "error") console.error(message);
  });
}
