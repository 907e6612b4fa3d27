// Inlining workload of tests/system/test_node.sh (default flags): the top-level code calls
// outer, whose hot loop calls mid, which calls leaf; TurboFan compiles outer with mid and
// leaf inlined into it, so the three run as one optimised frame that the profile must show
// as three, each at its line (lines ending in "// MARK" are looked up by the test). Runs
// until argv[2] seconds have passed (or it is killed).
'use strict';

function leaf(i) {
  return ((i * i) ^ (i >>> 3)) % 7; // LEAF_HOT
}

function mid(i) {
  return leaf(i) + 1; // CALL_LEAF
}

function outer(n) {
  let s = 0;
  for (let i = 0; i < n; i++) { // OUTER_LOOP
    s += mid(i); // CALL_MID
  }
  return s;
}

const end = Date.now() + Number(process.argv[2] || 10) * 1000;
let total = 0;
while (Date.now() < end) {
  total += outer(100000); // CALL_OUTER
}
process.exitCode = total > 0 ? 0 : 1;
