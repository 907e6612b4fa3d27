// N-API workload of tests/system/test_node.sh: viaAddon calls the addon's callBack (C), which
// calls work back in JavaScript; work's loop is hot. Lines ending in "// MARK" are looked up
// by the test. Usage: node node_addon.js ADDON.node SECONDS
'use strict';

const addon = require(process.argv[2]);

function work(i) {
  let s = 0;
  for (let k = 0; k < 20000; k++) { // CB_LOOP
    s += (k * i) % 7; // CB_HOT
  }
  return s;
}

function viaAddon() {
  return addon.callBack(work, 20); // CALL_ADDON
}

const end = Date.now() + Number(process.argv[3] || 10) * 1000;
let total = 0;
while (Date.now() < end) {
  total += viaAddon(); // CALL_VIA
}
process.exitCode = total > 0 ? 0 : 1;
