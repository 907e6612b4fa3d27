// Benchmark workload of bench/node.sh: the top-level code calls down() 30 deep, the deepest
// runs a hot loop; lines ending in "// MARK" are looked up by the benchmark. argv[2]: hot
// loop iterations per call (0: one call whose loop runs until the end, so that it runs in
// the code V8 compiles for the loop on the stack, OSR), argv[3]: seconds to run.
'use strict';

function down(n, iters, end) {
  if (n > 1) {
    return down(n - 1, iters, end) + 1; // RECURSE
  }
  let s = 0;
  for (let i = 0; i < iters; i++) { // LOOP
    s += (i * i) % 7; if ((i & 0xfffff) === 0 && Date.now() > end) break; // HOT
  }
  return s;
}

const iters = Number(process.argv[2] || 1000000) || Infinity;
const end = Date.now() + Number(process.argv[3] || 2) * 1000;
let total = 0;
while (Date.now() < end) {
  total += down(30, iters, end); // CALL_MAIN
}
process.exitCode = total > 0 ? 0 : 1;
