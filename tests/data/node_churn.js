// Code churn for tests/system/test_node.sh: round after round, a new script
// (churn_<k>.js, through vm.runInThisContext) defines f<k>, which runs a hot loop for a few
// milliseconds; the script is then dropped and the heap collected (--expose-gc), so V8
// frees its SharedFunctionInfo and Script and reuses their memory (full GCs also move live
// objects). A frame named f<k> must come from churn_<k>.js: any other pairing would be a
// name read from reused memory. Runs until argv[2] seconds have passed.
'use strict';
const vm = require('vm');

const end = Date.now() + Number(process.argv[2] || 10) * 1000;
let k = 0;
let total = 0;
while (Date.now() < end) {
  k++;
  const src = `(function f${k}(ms) {
  const stop = Date.now() + ms;
  let s = 0;
  while (Date.now() < stop) {
    for (let i = 0; i < 10000; i++) { s += (i * ${k}) % 13; }
  }
  return s;
})`;
  const fn = vm.runInThisContext(src, { filename: `churn_${k}.js` });
  total += fn(5); // CALL_F
  if (k % 20 === 0 && global.gc) {
    global.gc();
  }
}
process.exitCode = total > 0 ? 0 : 1;
