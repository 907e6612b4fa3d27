// On-stack replacement case of tests/system/test_node.sh: main_loop() is called once and
// loops until argv[2] seconds have passed, calling alpha -> beta -> gamma, so after its
// first few thousand iterations it runs only in the optimised code V8 compiled for its loop
// while it ran (OSR code, never the function's own Code), with alpha, beta and gamma inlined
// into it (TurboFan by default; with --max-opt=2 on a V8 built with Maglev, Node 24's, the
// loop runs in Maglev's OSR code instead). The frame of OSR code keeps the interpreter
// frame's layout: a BytecodeArray and the bytecode offset of the loop's back edge stay in
// its slots. Lines ending in "// MARK" are looked up by the test.
'use strict';

function gamma(i) {
  let s = 0;
  for (let k = 1; k < 120; k++) { // G_LOOP
    s += (i * k) % 23; // G_HOT
  }
  return s;
}

function beta(i) {
  return gamma(i) + 1; // CALL_GAMMA
}

function alpha(i) {
  return beta(i) ^ 1; // CALL_BETA
}

function main_loop(secs) {
  const end = Date.now() + secs * 1000;
  let s = 0;
  for (let i = 0; ; i++) { // OSR_LOOP
    s = (s + alpha(i & 0xffff)) & 0xfffffff; // CALL_ALPHA
    if ((i & 0xffff) === 0 && Date.now() > end) { // OSR_CHECK
      return s;
    }
  }
}

process.exitCode = main_loop(Number(process.argv[2] || 10)) > 0 ? 0 : 1; // CALL_MAIN
