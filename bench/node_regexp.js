// Workload of bench/node_columns.sh: a regular expression that backtracks (quadratic over its
// start positions), compiled by V8 to machine code once it has run. Runs argv[2] seconds.
'use strict';

const backtrack = /(a+|b+)*c[0-9]{3}x/;
const subject = 'ab'.repeat(150) + 'c123y';

function matchAll() {
  let n = 0;
  for (let i = 0; i < 20; i++) {
    n += backtrack.test(subject) ? 1 : 0; // CALL_TEST
  }
  return n + 1;
}

const end = Date.now() + Number(process.argv[2] || 2) * 1000;
let total = 0;
while (Date.now() < end) {
  total += matchAll(); // CALL_MATCH
}
process.exitCode = total > 0 ? 0 : 1;
