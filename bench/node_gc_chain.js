// Workload of bench/node_columns.sh: alpha -> beta -> gamma, gamma allocating in its loop so
// that, with a small young generation, V8 scavenges all the time from the process's start
// (the script's source is young then, and moves). Lines ending in "// MARK" are looked up by
// the bench. Runs argv[2] seconds.
'use strict';

function gamma(n) {
  let s = 0;
  for (let i = 0; i < n; i++) { // LOOP
    s += [i, i * i, { k: i }].length; // HOT
  }
  return s;
}

function beta(n) {
  return gamma(n) + 1; // CALL_GAMMA
}

function alpha(n) {
  return beta(n) + 1; // CALL_BETA
}

const end = Date.now() + Number(process.argv[2] || 2) * 1000;
let total = 0;
while (Date.now() < end) {
  total += alpha(20000); // CALL_ALPHA
}
process.exitCode = total > 0 ? 0 : 1;
