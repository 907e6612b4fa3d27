// On-stack replacement case of tests/system/test_node.sh (default flags): spin() is called
// once and loops until argv[2] seconds have passed, so after its first few thousand
// iterations it runs only in the optimised code V8 compiled for its loop while it ran (OSR
// code, never the function's own Code); lines ending in "// MARK" are looked up by the test.
'use strict';

function spin(secs) {
  const end = Date.now() + secs * 1000;
  let s = 0;
  for (let i = 0; ; i++) { // OSR_LOOP
    s += (i * 7) % 23; // OSR_HOT
    if ((i & 0xfffff) === 0 && Date.now() > end) { // OSR_CHECK
      return s;
    }
  }
}

process.exitCode = spin(Number(process.argv[2] || 10)) > 0 ? 0 : 1; // CALL_SPIN
