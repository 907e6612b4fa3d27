// Known-chain workload of tests/system/test_node.sh: the top-level code calls alpha -> beta ->
// gamma, whose loop is hot; lines ending in "// MARK" are looked up by the test. Runs until
// argv[2] seconds have passed (or it is killed). With argv[3], first writes V8's own stack
// trace of the top level there (the frames of node's module loader above it, at their
// lines and columns).
'use strict';

function gamma(n) {
  let s = 0;
  for (let i = 0; i < n; i++) { // LOOP
    s += (i * i) % 7; // HOT
  }
  return s;
}

function beta(n) {
  return gamma(n) + 1; // CALL_GAMMA
}

function alpha(n) {
  return beta(n) + 1; // CALL_BETA
}

if (process.argv[3]) {
  require('fs').writeFileSync(process.argv[3], new Error('top level').stack + '\n');
}

const end = Date.now() + Number(process.argv[2] || 10) * 1000;
let total = 0;
while (Date.now() < end) {
  total += alpha(200000); // CALL_ALPHA
}
process.exitCode = total > 0 ? 0 : 1;
