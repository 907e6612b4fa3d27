// Worker and async workload of tests/system/test_node.sh (default flags): the main thread
// runs asyncLoop, whose tick awaits a timer and then calls spin (its hot loop runs in a
// microtask, resumed from the event loop); a worker thread (worker_threads: its own isolate
// in the same process) runs inWorker -> burn. Lines ending in "// MARK" are looked up by the
// test. Usage: node node_worker.js SECONDS
'use strict';
const { Worker, isMainThread, workerData } = require('worker_threads');

function burn(n) {
  let s = 0;
  for (let i = 0; i < n; i++) { // W_LOOP
    s += (i * 3) % 11; // W_HOT
  }
  return s;
}

function inWorker(secs) {
  const end = Date.now() + secs * 1000;
  let t = 0;
  while (Date.now() < end) {
    t += burn(3000000); // CALL_BURN
  }
  return t;
}

function spin(n) {
  let s = 0;
  for (let i = 0; i < n; i++) { // A_LOOP
    s += (i * 5) % 13; // A_HOT
  }
  return s;
}

async function tick(n) {
  await new Promise((resolve) => setTimeout(resolve, 1));
  return spin(n); // CALL_SPIN
}

async function asyncLoop(secs) {
  const end = Date.now() + secs * 1000;
  let t = 0;
  while (Date.now() < end) {
    t += await tick(3000000);
  }
  return t;
}

if (isMainThread) {
  const secs = Number(process.argv[2] || 10);
  new Worker(__filename, { workerData: secs });
  asyncLoop(secs).then((t) => {
    process.exitCode = t > 0 ? 0 : 1;
  });
} else {
  inWorker(workerData); // CALL_WORKER
}
